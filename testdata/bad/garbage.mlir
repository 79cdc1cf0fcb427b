%%% not mlir
^bb ^bb @@ = !! %0 { = stablehlo. lorem %0
{ dense< stablehlo. dense< ^bb ^bb { ipsum :: {
: > -> : lorem -> ^bb ->
) ) tensor<
= dense< : #loc func = ( module -> =
ipsum func = ^bb @@ :: :: lorem
module -> { ->
:: :: = ) ( !! dense< = dense< ^bb
tensor< > !! ^bb func :
:: > : } ) : :
stablehlo. > :: :: ) @@ ) #loc module %0 )
^bb lorem = ) tensor<
