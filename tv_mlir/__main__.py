import sys

from tv_mlir.cli import main

sys.exit(main())
