/* SPDX-License-Identifier: MIT
 *
 * ddp_cubin.c - kernels and parameter layouts of a cubin (CUDA ELF), via
 * libelf.
 *
 * A cubin is an ELF64 file with e_machine EM_CUDA (190).  Every kernel X has
 * a section `.nv.info.X` (and `.text.X`, `.nv.constant0.X`) holding records
 *     u8 format, u8 attribute, u16 value_or_size, [payload]
 * format 1 NVAL, 2 BVAL, 3 HVAL: 4 bytes, the value in the u16;
 * format 4 SVAL: the u16 is the payload size, the payload follows.
 * The attributes read here (verified on nvcc 13.0, sm_75..sm_120):
 *   0x17 EIATTR_KPARAM_INFO     SVAL 12: u32 index, u16 ordinal, u16 offset,
 *        u32 packed: bits 0-7 log2 pointee alignment, 8-11 space (5 marks a
 *        pointer on sm_100+), 12-16 cbank (0x1f seen), 18-31 size.
 *   0x45 EIATTR_KPARAM_INFO_V2  SVAL 12 (parameter areas over 4 KB): u32
 *        index, u16 ordinal, u16 offset, u32 bits 0-23 size, 24-31 space.
 *   0x19 EIATTR_CBANK_PARAM_SIZE HVAL: bytes of the parameter area.
 * Records come in reverse ordinal order; a kernel without parameters has no
 * KPARAM record and no CBANK_PARAM_SIZE.
 * Device variables are the STT_OBJECT symbols of the .nv.global* and
 * .nv.constant* sections (name and st_size).
 *
 * Contract: pure functions of their input; any thread (libelf's version
 * handshake runs once under pthread_once).  ddp_cubin_size reads only
 * [image, image + len) when len != 0.  libelf gets a private copy of the
 * image, since elf_memory may write to its buffer.
 */
#include <ctype.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_array.h"
#include "ddp_bytes.h"
#include "ddp_fatbin.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

#define NVINFO_PREFIX ".nv.info."
#define EIFMT_NVAL 1
#define EIFMT_BVAL 2
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define EIATTR_KPARAM_INFO_V2 0x45
#define KPARAM_SPACE_POINTER 5u
#define KPARAM_MAX_ORDINAL 0xffffu

/* ---- size from the headers --------------------------------------------- */

/* end = max(end, off + n * each); false on overflow or over the limit. */
static bool extend_end(size_t *end, uint64_t off, uint64_t n, uint64_t each)
{
	if (each && n > DDP_FATBIN_MAX_SIZE / each)
		return false;
	uint64_t bytes = n * each;
	if (off > DDP_FATBIN_MAX_SIZE || bytes > DDP_FATBIN_MAX_SIZE - off)
		return false;
	if (off + bytes > *end)
		*end = (size_t)(off + bytes);
	return true;
}

ddp_result ddp_cubin_size(const void *image, size_t len, size_t *size, char *err, size_t errlen)
{
	const uint8_t *p = image;
	Elf64_Ehdr eh;
	size_t end = sizeof eh;

	*size = 0;
	if (!image)
		return ddp_fatbin_fail(err, errlen, "cubin pointer is NULL");
	if (len && len < sizeof eh)
		return ddp_fatbin_fail(err, errlen,
				       "cubin is truncated: %zu bytes, its ELF header alone needs %zu", len,
				       sizeof eh);
	memcpy(&eh, p, sizeof eh);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return ddp_fatbin_fail(err, errlen, "cubin does not start with the ELF magic");
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return ddp_fatbin_fail(err, errlen,
				       "cubin is not a little-endian ELF64 file (class %u, data %u)",
				       eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA]);
	if (eh.e_machine != EM_CUDA)
		return ddp_fatbin_fail(err, errlen,
				       "ELF file is for machine %u, not EM_CUDA (190): not a cubin",
				       eh.e_machine);
	if (eh.e_phnum) {
		if (eh.e_phentsize != sizeof(Elf64_Phdr))
			return ddp_fatbin_fail(err, errlen,
					       "cubin declares %u-byte program headers (expected %zu)",
					       eh.e_phentsize, sizeof(Elf64_Phdr));
		if (!extend_end(&end, eh.e_phoff, eh.e_phnum, sizeof(Elf64_Phdr)) || (len && end > len))
			return ddp_fatbin_fail(err, errlen,
					       "cubin's program headers (%u at byte %llu) lie beyond the %s",
					       eh.e_phnum, (unsigned long long)eh.e_phoff,
					       len ? "bytes given" : "size limit");
	}
	uint64_t shnum = eh.e_shnum;
	if (eh.e_shoff) {
		Elf64_Shdr sh0;
		if (eh.e_shentsize != sizeof(Elf64_Shdr))
			return ddp_fatbin_fail(err, errlen,
					       "cubin declares %u-byte section headers (expected %zu)",
					       eh.e_shentsize, sizeof(Elf64_Shdr));
		if (!extend_end(&end, eh.e_shoff, 1, sizeof(Elf64_Shdr)) || (len && end > len))
			return ddp_fatbin_fail(
				err, errlen, "cubin's section table (byte %llu) lies beyond the %s",
				(unsigned long long)eh.e_shoff, len ? "bytes given" : "size limit");
		if (shnum == 0) { /* extended numbering: the count is in section 0 */
			memcpy(&sh0, p + eh.e_shoff, sizeof sh0);
			shnum = sh0.sh_size;
		}
		if (!extend_end(&end, eh.e_shoff, shnum, sizeof(Elf64_Shdr)) || (len && end > len))
			return ddp_fatbin_fail(
				err, errlen,
				"cubin's section table (%llu sections at byte %llu) lies beyond the %s",
				(unsigned long long)shnum, (unsigned long long)eh.e_shoff,
				len ? "bytes given" : "size limit");
		for (uint64_t i = 0; i < shnum; i++) {
			Elf64_Shdr sh;
			memcpy(&sh, p + eh.e_shoff + i * sizeof sh, sizeof sh);
			if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
				continue;
			if (!extend_end(&end, sh.sh_offset, 1, sh.sh_size) || (len && end > len))
				return ddp_fatbin_fail(
					err, errlen,
					"cubin section %llu (%llu bytes at byte %llu) lies beyond the %s",
					(unsigned long long)i, (unsigned long long)sh.sh_size,
					(unsigned long long)sh.sh_offset, len ? "bytes given" : "size limit");
		}
	}
	if (eh.e_phnum) {
		for (uint64_t i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			memcpy(&ph, p + eh.e_phoff + i * sizeof ph, sizeof ph);
			if (!extend_end(&end, ph.p_offset, 1, ph.p_filesz) || (len && end > len))
				return ddp_fatbin_fail(err, errlen, "cubin segment %llu lies beyond the %s",
						       (unsigned long long)i,
						       len ? "bytes given" : "size limit");
		}
	}
	*size = end;
	return DDP_OK;
}

/* ---- .nv.info.<kernel> -------------------------------------------------- */

struct kp_slot {
	struct ddp_kparam p;
	bool seen;
};

/* Grows *slots to hold ordinal ord. */
static ddp_result kp_reserve(struct kp_slot **slots, size_t *cap, size_t ord)
{
	size_t old = *cap;
	struct kp_slot *n = ddp_array_grow(*slots, cap, ord + 1, sizeof *n, 16);
	if (!n)
		return DDP_ERR_NOMEM;
	memset(n + old, 0, (*cap - old) * sizeof *n);
	*slots = n;
	return DDP_OK;
}

static ddp_result nvinfo_parse(const char *kname, const uint8_t *d, size_t n, struct ddp_kernel_info *k,
			       char *err, size_t errlen)
{
	struct kp_slot *slots = NULL;
	size_t cap = 0, nparams = 0, pos = 0;
	bool have_cbank = false;
	uint32_t cbank = 0, end_max = 0;
	ddp_result rc = DDP_OK;

	while (pos < n) {
		if (n - pos < 4) {
			rc = ddp_fatbin_fail(err, errlen, "cubin: .nv.info.%s is truncated at byte %zu",
					     kname, pos);
			goto out_free_slots;
		}
		uint8_t fmt = d[pos], attr = d[pos + 1];
		uint16_t val = ddp_rd16(d + pos + 2);
		const uint8_t *pl = d + pos + 4;
		size_t at = pos;
		pos += 4;
		if (fmt == EIFMT_SVAL) {
			if (val > n - pos) {
				rc = ddp_fatbin_fail(
					err, errlen,
					"cubin: .nv.info.%s record at byte %zu declares %u payload bytes, %zu remain",
					kname, at, val, n - pos);
				goto out_free_slots;
			}
			pos += val;
		} else if (fmt != EIFMT_NVAL && fmt != EIFMT_BVAL && fmt != EIFMT_HVAL) {
			rc = ddp_fatbin_fail(err, errlen,
					     "cubin: .nv.info.%s record at byte %zu has unknown format %u",
					     kname, at, fmt);
			goto out_free_slots;
		}

		if (attr == EIATTR_CBANK_PARAM_SIZE && fmt == EIFMT_HVAL) {
			have_cbank = true;
			cbank = val;
		} else if ((attr == EIATTR_KPARAM_INFO || attr == EIATTR_KPARAM_INFO_V2) && fmt == EIFMT_SVAL) {
			if (val < 12) {
				rc = ddp_fatbin_fail(
					err, errlen,
					"cubin: .nv.info.%s parameter record at byte %zu has %u bytes (12 expected)",
					kname, at, val);
				goto out_free_slots;
			}
			uint16_t ord = ddp_rd16(pl + 4), off = ddp_rd16(pl + 6);
			uint32_t w = ddp_rd32(pl + 8), size, space;
			if (attr == EIATTR_KPARAM_INFO) {
				size = w >> 18;
				space = (w >> 8) & 0xf;
			} else {
				size = w & 0xffffff;
				space = w >> 24;
			}
			DDP_CHECK_GOTO(kp_reserve(&slots, &cap, ord), rc, out_free_slots);
			struct ddp_kparam p = { off, size,
						space == KPARAM_SPACE_POINTER ? DDP_KPARAM_POINTER : 0 };
			if (slots[ord].seen && memcmp(&slots[ord].p, &p, sizeof p) != 0) {
				rc = ddp_fatbin_fail(
					err, errlen,
					"cubin: .nv.info.%s describes parameter %u twice, differently", kname,
					ord);
				goto out_free_slots;
			}
			slots[ord].p = p;
			slots[ord].seen = true;
			if ((size_t)ord + 1 > nparams)
				nparams = (size_t)ord + 1;
			if ((uint32_t)off + size > end_max)
				end_max = (uint32_t)off + size;
		}
	}

	for (size_t i = 0; i < nparams; i++) {
		if (!slots[i].seen) {
			rc = ddp_fatbin_fail(err, errlen,
					     "cubin: .nv.info.%s describes parameter %zu but not parameter %zu",
					     kname, nparams - 1, i);
			goto out_free_slots;
		}
	}
	if (have_cbank && end_max > cbank) {
		rc = ddp_fatbin_fail(err, errlen,
				     "cubin: kernel %s has parameters up to byte %u of a %u-byte parameter area",
				     kname, end_max, cbank);
		goto out_free_slots;
	}
	if (nparams) {
		k->params = malloc(nparams * sizeof *k->params);
		if (!k->params) {
			rc = DDP_ERR_NOMEM;
			goto out_free_slots;
		}
		for (size_t i = 0; i < nparams; i++)
			k->params[i] = slots[i].p;
	}
	k->nparams = (uint32_t)nparams;
	k->param_bytes = have_cbank ? cbank : end_max;
out_free_slots:
	free(slots);
	return rc;
}

/* ---- kernel symbols ------------------------------------------------------ */

/* Kernels are STT_FUNC symbols with STO_CUDA_ENTRY in st_other; device
 * functions compiled with -G also get a .nv.info.<name> section, so the
 * section alone does not make a kernel. */
#define STO_CUDA_ENTRY 0x10

struct name_set {
	const char **names; /* sorted, point into libelf's string table */
	size_t n;
	bool any_symtab; /* false: no symbol table, take every .nv.info.X */
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static ddp_result collect_entries(Elf *e, struct name_set *set, char *err, size_t errlen)
{
	size_t cap = 0;
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		set->any_symtab = true;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			return ddp_fatbin_fail(err, errlen, "cubin symbol table is unreadable: %s",
					       elf_errmsg(-1));
		size_t nsym = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < nsym; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym))
				break;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || !(sym.st_other & STO_CUDA_ENTRY))
				continue;
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !name[0])
				continue;
			if (set->n == cap) {
				size_t ncap = cap ? 2 * cap : 32;
				const char **nn = realloc(set->names, ncap * sizeof *nn);
				if (!nn)
					return DDP_ERR_NOMEM;
				set->names = nn;
				cap = ncap;
			}
			set->names[set->n++] = name;
		}
	}
	if (set->n)
		qsort(set->names, set->n, sizeof *set->names, cmp_name);
	return DDP_OK;
}

static bool is_entry(const struct name_set *set, const char *name)
{
	if (!set->any_symtab)
		return true;
	return set->n && bsearch(&name, set->names, set->n, sizeof *set->names, cmp_name) != NULL;
}

/* ---- device variables ---------------------------------------------------- */

/* STT_OBJECT symbols of the .nv.global* (__device__) and .nv.constant*
 * (__constant__) sections; names that are not C identifiers or mangled
 * names ($str and the like) are left out. */
static ddp_result collect_globals(Elf *e, size_t shstrndx, struct ddp_module_info *m, char *err, size_t errlen)
{
	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			return ddp_fatbin_fail(err, errlen, "cubin symbol table is unreadable: %s",
					       elf_errmsg(-1));
		size_t nsym = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < nsym; i++) {
			GElf_Sym sym;
			GElf_Shdr ssh;
			if (!gelf_getsym(d, (int)i, &sym))
				break;
			if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE)
				continue;
			Elf_Scn *home = elf_getscn(e, sym.st_shndx);
			const char *sec = home && gelf_getshdr(home, &ssh)
						  ? elf_strptr(e, shstrndx, ssh.sh_name)
						  : NULL;
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!sec || !name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
				continue;
			int constant = strncmp(sec, ".nv.constant", 12) == 0;
			if (!constant && strncmp(sec, ".nv.global", 10) != 0)
				continue;
			size_t n = m->nglobals;
			if (n == 0 || (n & (n - 1)) == 0) {
				struct ddp_global_info *g = realloc(m->globals, (n ? 2 * n : 8) * sizeof *g);
				if (!g)
					return DDP_ERR_NOMEM;
				m->globals = g;
			}
			m->globals[n].name = strdup(name);
			if (!m->globals[n].name)
				return DDP_ERR_NOMEM;
			m->globals[n].size = sym.st_size;
			m->globals[n].constant = (uint32_t)constant;
			m->nglobals = n + 1;
		}
	}
	return DDP_OK;
}

/* ---- libelf ------------------------------------------------------------- */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ok;

static void elf_init_once(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

/* SM from e_flags: ABI version 8+ (CUDA 12.8+) keeps it in bits 8-15,
 * older cubins in bits 0-7. */
static uint32_t cubin_arch(const GElf_Ehdr *eh)
{
	if (eh->e_ident[EI_ABIVERSION] >= 8)
		return (uint32_t)(eh->e_flags >> 8) & 0xff;
	return (uint32_t)eh->e_flags & 0xff;
}

ddp_result ddp_cubin_parse(const uint8_t *elf, size_t size, struct ddp_module_info *m, char *err, size_t errlen)
{
	ddp_result rc = DDP_OK;
	GElf_Ehdr eh;
	size_t shstrndx;
	struct ddp_kernel_info k;
	struct name_set entries = { NULL, 0, false };
	Elf *e;
	char *copy;

	memset(&k, 0, sizeof k);
	pthread_once(&elf_once, elf_init_once);
	if (!elf_ok)
		return ddp_fatbin_fail(err, errlen, "libelf refused version EV_CURRENT");
	if (!elf || size < sizeof(Elf64_Ehdr))
		return ddp_fatbin_fail(err, errlen, "cubin is truncated: %zu bytes", size);
	copy = malloc(size);
	if (!copy)
		return DDP_ERR_NOMEM;
	memcpy(copy, elf, size);
	e = elf_memory(copy, size);
	if (!e) {
		rc = ddp_fatbin_fail(err, errlen, "libelf cannot open the cubin: %s", elf_errmsg(-1));
		goto out_free_copy;
	}
	if (elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 || !gelf_getehdr(e, &eh)) {
		rc = ddp_fatbin_fail(err, errlen, "cubin is not a readable ELF64 file: %s", elf_errmsg(-1));
		goto out_end_elf;
	}
	if (eh.e_machine != EM_CUDA) {
		rc = ddp_fatbin_fail(err, errlen, "ELF file is for machine %u, not EM_CUDA (190): not a cubin",
				     eh.e_machine);
		goto out_end_elf;
	}
	if (elf_getshdrstrndx(e, &shstrndx) != 0) {
		rc = ddp_fatbin_fail(err, errlen, "cubin has no section name table: %s", elf_errmsg(-1));
		goto out_end_elf;
	}
	if (m->arch == 0)
		m->arch = cubin_arch(&eh);
	DDP_CHECK_GOTO(collect_entries(e, &entries, err, errlen), rc, out_free_names);
	DDP_CHECK_GOTO(collect_globals(e, shstrndx, m, err, errlen), rc, out_free_names);

	for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh)) {
			rc = ddp_fatbin_fail(err, errlen, "cubin section %zu is unreadable: %s",
					     elf_ndxscn(scn), elf_errmsg(-1));
			goto out_free_names;
		}
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strncmp(name, NVINFO_PREFIX, strlen(NVINFO_PREFIX)) != 0 ||
		    !name[strlen(NVINFO_PREFIX)])
			continue;
		const char *kname = name + strlen(NVINFO_PREFIX);
		if (!is_entry(&entries, kname))
			continue;
		if (sh.sh_type == SHT_NOBITS) {
			rc = ddp_fatbin_fail(err, errlen, "cubin: section %s has no contents", name);
			goto out_free_names;
		}
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d && sh.sh_size) {
			rc = ddp_fatbin_fail(err, errlen, "cubin: section %s is unreadable: %s", name,
					     elf_errmsg(-1));
			goto out_free_names;
		}
		k.name = strdup(kname);
		if (!k.name) {
			rc = DDP_ERR_NOMEM;
			goto out_free_names;
		}
		DDP_CHECK_GOTO(nvinfo_parse(kname, d && d->d_buf ? d->d_buf : (const void *)"",
					    d && d->d_buf ? d->d_size : 0, &k, err, errlen),
			       rc, out_clear_kernel);
		DDP_CHECK_GOTO(ddp_module_add_kernel(m, &k), rc, out_clear_kernel);
	}
	goto out_free_names;

out_clear_kernel:
	ddp_kernel_info_clear(&k);
out_free_names:
	free(entries.names);
out_end_elf:
	elf_end(e);
out_free_copy:
	free(copy);
	return rc;
}
