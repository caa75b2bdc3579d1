# SPDX-License-Identifier: MIT
#
# runtime/image/: the fatbin/cubin/PTX reader, the demangler and kernel signatures.
$(eval $(call ddp_module,image,$(wildcard runtime/image/*.c)))
