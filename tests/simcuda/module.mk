# tests/simcuda: the CPU device (owned by the simcuda work; placeholder).
