"""Module -> Module passes and the named pipelines that compose them."""
from tv_mlir.passes.pipeline import PASSES, Pipeline, load_pipeline, run_pipeline

__all__ = ["PASSES", "Pipeline", "load_pipeline", "run_pipeline"]
