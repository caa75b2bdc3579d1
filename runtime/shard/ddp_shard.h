/* SPDX-License-Identifier: MIT
 *
 * ddp_shard.h - input sharding: spec parsing, file formats, per-rank views.
 *
 * A --shard spec is `PATH[:mode=stride|block][:record=BYTES][:header=BYTES]
 * [:pad|:drop]` (globs allowed in PATH).  A sharded file is a header followed
 * by `record_count` records of `record_bytes` bytes (struct ddp_shard_layout,
 * found from the header by ddp_shard_format_detect or declared by the spec).
 * Each rank sees a virtual file (struct ddp_shard_view): the header, with the
 * count rewritten where the format holds one, followed by its records.
 *
 * Record k of a rank's view is source record (first + k * step) mod count:
 *   stride  step = N, first = r; count_r = M/N + (r < M%N)   (keep)
 *   block   step = 1; rank r gets the r-th of N contiguous slices, the first
 *           M%N slices one record longer: first = r*(M/N) + min(r, M%N)
 *   :pad    every rank gets ceil(M/N) records; the index list is extended by
 *           repeating it from the start (PyTorch's DistributedSampler)
 *   :drop   every rank gets floor(M/N) records (the tail is never seen)
 *
 * Contract: pure functions, no global state, no allocation (except
 * ddp_shard_check_spec, which opens, reads and globs files).  Errors come back
 * as DDP_ERR_INVALID with a one-line message in err (no prefix; the caller
 * adds "ddprun:" or "libddp:"); nothing is logged by the parsers, so they can
 * be fuzzed.
 */
#ifndef DDP_SHARD_H
#define DDP_SHARD_H

#include <stddef.h>
#include <glob.h>
#include <stdint.h>
#include <sys/types.h>
#include "ddp_err.h"

#define DDP_SHARD_PATH_MAX 4096
/* Bytes of a file's start that format detection looks at (npy headers must
 * fit; every other format's header is smaller). */
#define DDP_SHARD_HEAD_MAX 65536
/* Most specs one DDP_SHARD value may hold. */
#define DDP_SHARD_MAX_SPECS 32

enum ddp_shard_mode {
	DDP_SHARD_MODE_AUTO = 0, /* the format's natural mode: block for tokens, else stride */
	DDP_SHARD_STRIDE,
	DDP_SHARD_BLOCK,
};

enum ddp_shard_uneven {
	DDP_SHARD_KEEP = 0, /* the first M%N ranks get one record more */
	DDP_SHARD_PAD,      /* repeat records from the start up to ceil(M/N) each */
	DDP_SHARD_DROP,     /* trim to floor(M/N) each */
};

enum ddp_shard_fmt {
	DDP_SHARD_FMT_UNKNOWN = 0, /* no magic recognised                     */
	DDP_SHARD_FMT_RAW,         /* declared record=/header=; header copied */
	DDP_SHARD_FMT_DDPREC,      /* the samples' "DDPREC01" record files    */
	DDP_SHARD_FMT_IDX,         /* MNIST idx                               */
	DDP_SHARD_FMT_NPY,         /* NumPy .npy v1/v2/v3                     */
	DDP_SHARD_FMT_TOKENS,      /* 256-int32 token shards (20240520/20240801) */
};

/* One parsed --shard spec. */
struct ddp_shard_spec {
	char path[DDP_SHARD_PATH_MAX]; /* PATH as given (may hold glob characters) */
	enum ddp_shard_mode mode;      /* AUTO unless mode= was given              */
	uint64_t record;               /* record= bytes; 0 when not given          */
	uint64_t header;               /* header= bytes; UINT64_MAX when not given */
	enum ddp_shard_uneven uneven;  /* :pad / :drop / neither                   */
};

/* What a file holds. */
struct ddp_shard_layout {
	enum ddp_shard_fmt fmt;
	uint64_t file_size;
	uint64_t header_bytes;            /* bytes before the first record              */
	uint64_t record_bytes;            /* bytes of one record                        */
	uint64_t record_count;            /* records in the file                        */
	uint64_t item_bytes;              /* unit of the header's count field (a token, a
				  * row, an image); record_bytes is a multiple */
	uint32_t count_off;               /* npy: offset of the first shape dimension's
				  * digits in the header; others: unused      */
	uint32_t count_len;               /* npy: number of those digits               */
	enum ddp_shard_mode natural_mode; /* block for tokens, else stride     */
};

/* A rank's virtual file. */
struct ddp_shard_view {
	uint64_t header_bytes;
	uint64_t record_bytes;
	uint64_t src_records; /* M: records in the source file          */
	uint64_t count;       /* records this rank sees                 */
	uint64_t first;       /* source index of record 0 (before mod M) */
	uint64_t step;        /* 1 (block) or N (stride)                */
	uint64_t size;        /* header_bytes + count * record_bytes    */
};

/* Reads n bytes at off of the real file into buf: what pread returns. */
typedef ssize_t (*ddp_shard_pread_fn)(void *ctx, void *buf, size_t n, uint64_t off);

/* Parses one spec (no newline).  DDP_ERR_INVALID with a message in err. */
ddp_result ddp_shard_parse_spec(const char *text, struct ddp_shard_spec *out /* OUT */, char *err,
				size_t errlen);

/* Parses a DDP_SHARD value: specs separated by newlines (blank lines
 * ignored).  specs has room for max entries; *n gets the number parsed. */
ddp_result ddp_shard_parse_list(const char *text, struct ddp_shard_spec *specs /* OUT */, int max,
				int *n /* OUT */, char *err, size_t errlen);

/* Recognises a format from the first head_len bytes of a file of file_size
 * bytes (head_len = min(file_size, DDP_SHARD_HEAD_MAX)).  DDP_OK with
 * fmt = DDP_SHARD_FMT_UNKNOWN when no magic matched; DDP_ERR_INVALID when a
 * magic matched but the header is malformed or disagrees with the size. */
ddp_result ddp_shard_format_detect(const unsigned char *head, size_t head_len, uint64_t file_size,
				   struct ddp_shard_layout *out /* OUT */, char *err, size_t errlen);

/* Writes the header of a view holding `records` records into out
 * (l->header_bytes bytes; head holds the original header, at least that
 * long).  Rewrites the count of DDPREC, idx, npy and token files. */
ddp_result ddp_shard_format_rewrite(const struct ddp_shard_layout *l, const unsigned char *head,
				    uint64_t records, unsigned char *out /* OUT */);

/* Detects the format and applies the spec's record=/header= to it: a
 * detected format keeps its header and accepts record= only as a multiple of
 * its item; an unknown format needs record= (header= defaults to 0).  path is
 * for messages only. */
ddp_result ddp_shard_layout_resolve(const struct ddp_shard_spec *spec, const char *path,
				    const unsigned char *head, size_t head_len, uint64_t file_size,
				    struct ddp_shard_layout *out /* OUT */, char *err, size_t errlen);

/* ---- the files as ddprun saw them at launch (DDP_SHARD_FILES) ----
 * ddprun resolves every spec once, when it checks the specs: the files it
 * matches, with their size, mtime, device and inode.  The ranks take exactly
 * these files (they never expand a glob again, so a rank that changed folder
 * or a wrapper's `cd` changes nothing), split exactly those bytes and refuse
 * a file that changed since (a file growing between the ranks' opens would be
 * split by different sizes, and records seen by nobody).  One line per file:
 * "<spec> <size> <mtime_ns> <dev> <ino> <path>\n", spec the index of the
 * --shard option (0-based), path absolute. */
struct ddp_shard_fixed {
	uint64_t size;
	int64_t mtime_ns;
	uint64_t dev, ino;
};

/* Expands a spec's PATH like glob(3), except that a file named exactly
 * pattern (`train[1].raw`) is matched alone, before any glob.  glob's
 * return value; the caller globfree()s g when it is 0. */
int ddp_shard_glob(const char *pattern, glob_t *g);

/* Appends the lines of the files that spec (the spec_index-th --shard)
 * matches from the working folder to out[*len..cap), keeping it
 * NUL-terminated.  DDP_ERR_INVALID with a message when a file cannot be
 * listed or out is full.  For ddprun: does file I/O. */
ddp_result ddp_shard_snapshot(const char *spec, int spec_index, char *out, size_t cap, size_t *len, char *err,
			      size_t errlen);

/* Reads the next line of a DDP_SHARD_FILES value at *cursor (advanced):
 * 1 with *spec, *out and path (cap bytes) filled, 0 at the end (malformed
 * lines are skipped).  Pure. */
int ddp_shard_snapshot_next(const char **cursor, int *spec, struct ddp_shard_fixed *out /* OUT */,
			    char *path /* OUT */, size_t cap);

/* The view of rank `rank` of `world` ranks. */
ddp_result ddp_shard_view_init(const struct ddp_shard_spec *spec, const struct ddp_shard_layout *l, int rank,
			       int world, struct ddp_shard_view *out /* OUT */);

/* Source record index of the view's record k (k < v->count). */
static inline uint64_t ddp_shard_view_src(const struct ddp_shard_view *v, uint64_t k)
{
	return (v->first + k * v->step) % v->src_records;
}

/* Reads up to n bytes at virtual offset off into buf: the header from
 * header (the rewritten header, or NULL to read it from the real file),
 * records through rd(ctx, ...).  Returns the bytes read (0 at or past the
 * end, short only at the end or when the real file is short), or -1 with
 * errno from rd when it failed before anything was read.  Uses a 16 KiB stack
 * buffer to gather small strided records; never allocates. */
ssize_t ddp_shard_view_read(const struct ddp_shard_view *v, const unsigned char *header,
			    ddp_shard_pread_fn rd, void *ctx, void *buf, size_t n, uint64_t off);

/* Validates a spec for a job of world_size ranks: syntax, that PATH matches
 * at least one file, and that every matched file has a known layout.  The
 * message in err starts with "--shard SPEC: ".  ddprun calls it before it
 * starts any rank. */
ddp_result ddp_shard_check_spec(const char *spec, int world_size, char *err, size_t errlen);

/* Name of a format ("npy", "idx", ...). */
const char *ddp_shard_fmt_name(enum ddp_shard_fmt fmt);

#endif /* DDP_SHARD_H */
