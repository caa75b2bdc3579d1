# SPDX-License-Identifier: MIT
#
# runtime/: what the hooks decide, one folder per mechanism.  Each folder has
# its own module.mk that declares its sources with ddp_module; the folder's
# archive is $(BUILD)/lib/libddp_<name>.a, and a program or test links the
# modules it needs by name:
#
#   $(eval $(call ddp_module,NAME,SOURCES))  declares module NAME
#   $(call ddp_lib_files,NAMES)              their archives, top module first
#   $(call ddp_libs,NAMES)                   the same, for a link line
#
# Archives are linked once each, in the declared order, top first (no
# --start-group): a module may use only the modules below it, so a call
# from a lower module into an upper one (a back-edge) fails the link unless
# an upper object already pulled the symbol in; tests/arch catches each one.
# tests/arch/check_deps.py reads RUNTIME_MODULES from here and checks every
# archive's undefined symbols against this order.
#
# The dependency rule (checked by tests/arch/check_layers.sh in `make test`):
# runtime/ includes no header of interpose/ or launcher/, and reaches the
# real driver and libc only through port/ (ddp_port.h), so no runtime object
# imports a symbol that libddp.so exports.  Every runtime object is compiled
# once, with hidden visibility, and linked as it is into libddp.so, ddprun,
# the CPU device and the tests.
#
# Modules, lowest first:
#   port   the door outward: real driver and libc entry points
#   base   errors, logs, settings, element types, counters, traces, rank
#   write  write safety: the private overlay of ranks other than 0
#   image  fatbin/cubin/PTX reader, demangler, kernel signatures
#   shard  input sharding views and record formats
#   store  the rendezvous store: protocol, client, server
#   track  allocation table, kernel registry, launch decoder, inspector, summary
#   coll   collectives (host shared memory, NCCL)
#   job    the job: rank 0 hosting, joining, communicator
#   grad   gradient identification and synchronisation
RUNTIME_MODULES := port base write image shard store track coll job grad
RUNTIME_DIRS := $(addprefix runtime/,$(RUNTIME_MODULES))
CPPFLAGS += $(addprefix -I,$(RUNTIME_DIRS))

define ddp_module
DDP_MOD_SRCS_$(1) := $(2)
DDP_MOD_OBJS_$(1) := $$(patsubst %.c,$$(BUILD)/%.o,$(2))
DDP_MOD_LIB_$(1) := $$(BUILD)/lib/libddp_$(1).a
$$(DDP_MOD_LIB_$(1)): $$(DDP_MOD_OBJS_$(1))
	@mkdir -p $$(dir $$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
$$(DDP_MOD_OBJS_$(1)): CFLAGS += -fvisibility=hidden
BINS += $$(DDP_MOD_LIB_$(1))
RUNTIME_OBJS += $$(DDP_MOD_OBJS_$(1))
endef
ddp_reverse = $(if $(1),$(call ddp_reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
RUNTIME_MODULES_TOP_FIRST := $(strip $(call ddp_reverse,$(RUNTIME_MODULES)))
ddp_lib_files = $(foreach m,$(filter $(1),$(RUNTIME_MODULES_TOP_FIRST)),$(DDP_MOD_LIB_$(m)))
ddp_libs = $(call ddp_lib_files,$(1))

RUNTIME_OBJS :=
include $(addsuffix /module.mk,$(RUNTIME_DIRS))

# What ddprun, the CPU device, the tools and most tests link: the modules
# below track (in link order), and the libraries they need.
DDP_COMMON_MODULES := shard store image write base port
DDP_COMMON_LIB = $(call ddp_lib_files,$(DDP_COMMON_MODULES))
RUNTIME_COMMON_SRCS = $(foreach m,$(DDP_COMMON_MODULES),$(DDP_MOD_SRCS_$(m)))
DDP_COMMON_LIBS := -lelf -lzstd -llz4 -lstdc++ -lpthread -ldl
# Every module, for libddp.so and the tests of the upper modules.
DDP_ALL_LIBS = $(call ddp_libs,$(RUNTIME_MODULES))
DDP_ALL_LIB_FILES = $(call ddp_lib_files,$(RUNTIME_MODULES))
