"""Reference implementations in numpy: the oracles the tests compare the compiled kernels with."""
