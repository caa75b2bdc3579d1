# SPDX-License-Identifier: MIT
#
# nokernels.py - a driver-API program that, like many CUDA programs, never
# checks its launches: it loads a fatbin (argv[1]), asks for a kernel
# (argv[2]), "trains" with it and prints a loss of 0, exit 0.  On the CPU
# device the kernel has no host code beside python3, so it ran nowhere
# (tests/e2e/launcher/nokernels.sh).
import ctypes
import sys

cu = ctypes.CDLL("libcuda.so.1")
ctx, mod, fn, dev = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
cu.cuInit(0)
cu.cuDeviceGet(ctypes.byref(dev), 0)
cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
cu.cuCtxSetCurrent(ctx)
image = open(sys.argv[1], "rb").read()
cu.cuModuleLoadData(ctypes.byref(mod), image)
rc = cu.cuModuleGetFunction(ctypes.byref(fn), mod, sys.argv[2].encode())  # not checked, as often
print("loss 0.000000", flush=True)
