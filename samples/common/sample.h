/* SPDX-License-Identifier: MIT
 *
 * sample.h - host helpers shared by the sample trainers (samples/mlp,
 * samples/charlm, samples/fused): CUDA error checking, command-line parsing,
 * the fixed-record data reader, the initialisation PRNG and the save writer.
 *
 * The samples are ordinary single-GPU programs written against the CUDA
 * Driver API.  They know nothing of ddprun; nothing here may either.
 *
 * Contract: single-threaded programs; every failure prints ONE line prefixed
 * with the program name (sample_prog) and exits (1 for run-time errors, 2 for
 * bad command lines).  No function returns an error code.
 */
#ifndef SAMPLE_H
#define SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

/* Program name used as the prefix of every message ("mlp", "charlm", ...). */
extern const char *sample_prog;

/* ---- CUDA error checking ------------------------------------------------ */

/* CK(cuXxx(...)): on failure prints `prog: cuXxx failed: NAME (file:line)`
 * on stderr and exits 1. */
#define CK(call) sample_cuda_check((call), #call, __FILE__, __LINE__)
void sample_cuda_check(CUresult r, const char *expr, const char *file, int line);

/* ---- command line -------------------------------------------------------- */

enum sample_opt_kind {
	SAMPLE_OPT_STR,    /* const char **dst                                  */
	SAMPLE_OPT_INT,    /* int *dst, in [min, max]                            */
	SAMPLE_OPT_U64,    /* uint64_t *dst                                      */
	SAMPLE_OPT_FLOAT,  /* float *dst, finite, in [min, max]                  */
	SAMPLE_OPT_FLAG,   /* int *dst set to 1; takes no value                  */
	SAMPLE_OPT_CHOICE, /* int *dst = index of the value in choices ("a|b")   */
};

struct sample_opt {
	const char *name;          /* "--steps"                                    */
	enum sample_opt_kind kind;
	void *dst;                 /* where the value goes (type by kind)           */
	double min, max;           /* bounds for INT and FLOAT                      */
	const char *choices;       /* CHOICE: values separated by '|'               */
	int required;              /* 1: missing option is an error                 */
};

/* Parses argv against opts.  `usage` is the one-line synopsis printed after
 * a problem ("usage: mlp --data PATH ...").  --help prints usage and exits 0;
 * anything wrong prints `prog: PROBLEM; usage: ...` and exits 2. */
void sample_parse_args(int argc, char **argv, const struct sample_opt *opts, size_t nopts,
		       const char *usage);

/* ---- data ------------------------------------------------------------------ */

#define SAMPLE_REC_MAGIC "DDPREC01"
#define SAMPLE_REC_HEADER_BYTES 64u
#define SAMPLE_VOCAB 96u

/* A fixed-record data file (format in docs/samples.md), read sequentially
 * with plain read(); wraps to the first record at the end of the file. */
struct sample_data {
	const char *path;
	int fd;
	uint32_t header_bytes;  /* offset of record 0                         */
	uint32_t record_bytes;  /* bytes per record (= context + 1)           */
	uint64_t record_count;  /* records in the file                        */
	uint32_t vocab;         /* tokens are < vocab                          */
	uint32_t context;       /* input tokens per record                     */
	uint64_t next;          /* index of the next record read() returns      */
};

/* Opens and validates path; a bad file prints one line and exits 1. */
void sample_data_open(struct sample_data *d, const char *path);
/* Reads the next n records into buf (n * record_bytes bytes), wrapping. */
void sample_data_read(struct sample_data *d, unsigned char *buf, size_t n);
void sample_data_close(struct sample_data *d);

/* ---- initialisation --------------------------------------------------------- */

/* Random source for the initial weights: splitmix64 seeded with --seed, or
 * bytes from /dev/urandom (--init urandom). */
struct sample_rng {
	uint64_t state;          /* splitmix64 state                              */
	int fd;                  /* /dev/urandom, or -1 for the seeded generator  */
	unsigned char buf[4096]; /* urandom bytes not used yet                    */
	size_t pos, len;
};

void sample_rng_init(struct sample_rng *r, uint64_t seed, int use_urandom);
uint64_t sample_rng_next(struct sample_rng *r);
/* Fills p[0..n) with uniform values in [-scale, scale). */
void sample_rng_uniform(struct sample_rng *r, float *p, size_t n, float scale);
void sample_rng_close(struct sample_rng *r);

/* ---- output ---------------------------------------------------------------- */

/* Writes n float32 values (little-endian on the hosts we run on) to path. */
void sample_save(const char *path, const float *p, size_t n);

/* Prints `prog: MESSAGE` on stderr and exits with code. */
void sample_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* ---- CUDA setup --------------------------------------------------------------- */

/* ceil(n / block) as a launch grid size. */
static inline unsigned sample_blocks(long n, unsigned block)
{
	return (unsigned)((n + block - 1) / block);
}

/* Module functions: looked up by mangled name, reported by readable name. */
struct sample_kernel {
	CUfunction *fn;        /* where the handle goes                          */
	const char *mangled;   /* name in the cubin                              */
};

/* cuModuleGetFunction for every entry; a missing kernel is fatal. */
void sample_get_kernels(CUmodule mod, const struct sample_kernel *k, size_t n);

/* Prints `prog: ran N steps on DEVICE in S s` on stderr. */
void sample_report(CUdevice dev, int steps, double seconds);
double sample_now(void);

#endif /* SAMPLE_H */
