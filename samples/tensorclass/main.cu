// SPDX-License-Identifier: MIT
//
// main.cu - samples/tensorclass: a tiny MLP language model trained with a
// C++ Matrix class (docs/samples.md "tensorclass").
//
//   tensorclass --data PATH [--config FILE] [--alloc pool|async] [--steps N]
//
// Model (K = the data file's context, 8 for build/data/mlp.rec; V = 96):
//   x = concat(E[tok_0], ..., E[tok_{K-1}])       E: [V][8]
//   h = tanh(x W1 + b1)                            W1: [8K][32], b1: [1][32]
//   logits = h W2 + b2                             W2: [32][V],  b2: [1][V]
//   loss = mean over the batch of cross-entropy(logits, tok_K)
// Weights from the device RNG (rng.cu) with the config's seed; step s
// trains on records [s*B, s*B + B) (wrapping); plain SGD written out of
// place, update = grads * (-lr); weights = weights + update.
//
// The config file holds key=value lines (# comments): steps, batch, lr,
// seed, pool_mb.  Output: `step K loss V` per step, then `checksum C` (the
// sum of every parameter, in double) and `params N`.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>
#include "tensorclass.cuh"

namespace {
constexpr int kVocab = 96, kDim = 8, kHidden = 32;

struct Config {
	int steps = 20, batch = 16, pool_mb = 16;
	float lr = 0.5f;
	unsigned seed = 1234;
};

[[noreturn]] void die(const std::string &msg)
{
	std::cerr << "tensorclass: " << msg << "\n";
	std::exit(1);
}

std::string trim(const std::string &s)
{
	size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
	return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

Config read_config(const std::string &path)
{
	Config c;
	std::ifstream in(path);
	if (!in)
		die("cannot open config " + path);
	std::string line;
	int n = 0;
	while (std::getline(in, line)) {
		n++;
		line = trim(line.substr(0, line.find('#')));
		if (line.empty())
			continue;
		size_t eq = line.find('=');
		if (eq == std::string::npos)
			die(path + ":" + std::to_string(n) + ": expected key=value");
		std::string key = trim(line.substr(0, eq)), val = trim(line.substr(eq + 1));
		std::istringstream v(val);
		bool good;
		if (key == "steps")
			good = static_cast<bool>(v >> c.steps);
		else if (key == "batch")
			good = static_cast<bool>(v >> c.batch);
		else if (key == "lr")
			good = static_cast<bool>(v >> c.lr);
		else if (key == "seed")
			good = static_cast<bool>(v >> c.seed);
		else if (key == "pool_mb")
			good = static_cast<bool>(v >> c.pool_mb);
		else
			die(path + ":" + std::to_string(n) + ": unknown key " + key);
		if (!good)
			die(path + ":" + std::to_string(n) + ": bad value for " + key);
	}
	return c;
}

struct Records {
	int context = 0;
	uint64_t count = 0;
	uint32_t record_bytes = 0;
	std::vector<unsigned char> bytes;
};

Records read_records(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		die("cannot open data " + path);
	char head[64];
	if (!in.read(head, sizeof(head)) || std::memcmp(head, "DDPREC01", 8) != 0)
		die(path + ": not a DDPREC01 record file");
	Records r;
	uint32_t vocab, context;
	std::memcpy(&r.record_bytes, head + 12, 4);
	std::memcpy(&r.count, head + 16, 8);
	std::memcpy(&vocab, head + 24, 4);
	std::memcpy(&context, head + 28, 4);
	if (vocab != kVocab || context < 1 || r.record_bytes != context + 1 || r.count == 0)
		die(path + ": unexpected header (vocab, context, record size or count)");
	r.context = (int)context;
	r.bytes.resize(r.count * r.record_bytes);
	if (!in.read(reinterpret_cast<char *>(r.bytes.data()), (std::streamsize)r.bytes.size()))
		die(path + ": truncated");
	return r;
}

double checksum(const std::vector<Matrix *> &params, size_t *count)
{
	double s = 0;
	*count = 0;
	for (const Matrix *m : params) {
		std::vector<float> h(m->size());
		m->to_host(h.data());
		for (float x : h)
			s += x;
		*count += h.size();
	}
	return s;
}
} // namespace

int main(int argc, char **argv)
{
	std::string data, config, alloc = "pool";
	int steps_override = -1;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (i + 1 >= argc)
			die("option " + a + " needs a value (usage: tensorclass --data PATH [--config FILE] "
			    "[--alloc pool|async] [--steps N])");
		if (a == "--data")
			data = argv[++i];
		else if (a == "--config")
			config = argv[++i];
		else if (a == "--alloc")
			alloc = argv[++i];
		else if (a == "--steps")
			steps_override = std::atoi(argv[++i]);
		else
			die("unknown option " + a);
	}
	if (data.empty())
		die("--data PATH is required");
	if (alloc != "pool" && alloc != "async")
		die("--alloc wants pool or async, got " + alloc);
	Config cfg = config.empty() ? Config() : read_config(config);
	if (steps_override >= 0)
		cfg.steps = steps_override;
	Records rec = read_records(data);
	const int K = rec.context, B = cfg.batch;

	CUDA_CHECK(cudaFree(0)); // create the context
	cudaStream_t stream;
	CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	alloc_init(alloc == "pool" ? AllocMode::Pool : AllocMode::Async, (size_t)cfg.pool_mb << 20, stream);
	{
		Matrix E = random_uniform(kVocab, kDim, cfg.seed, 0, 0.5f);
		Matrix W1 = random_uniform(K * kDim, kHidden, cfg.seed, 1, 0.125f);
		Matrix b1 = Matrix::zeros(1, kHidden);
		Matrix W2 = random_uniform(kHidden, kVocab, cfg.seed, 2, 0.125f);
		Matrix b2 = Matrix::zeros(1, kVocab);
		std::vector<float> tok_host((size_t)B * (K + 1));

		for (int step = 0; step < cfg.steps; step++) {
			for (int b = 0; b < B; b++) {
				uint64_t r = ((uint64_t)step * B + b) % rec.count;
				for (int t = 0; t <= K; t++)
					tok_host[(size_t)b * (K + 1) + t] = rec.bytes[r * rec.record_bytes + t];
			}
			Matrix tokens = Matrix::from_host(B, K + 1, tok_host.data());
			// forward
			Matrix x = embed(E, tokens, K);
			Matrix h = matmul(x, W1).add_row(b1).tanh();
			Matrix logits = matmul(h, W2).add_row(b2);
			Matrix loss;
			Matrix dlogits = softmax_xent(logits, tokens, &loss);
			// backward
			Matrix dW2 = matmul(h.T(), dlogits);
			Matrix db2 = dlogits.col_sum();
			Matrix dpre = matmul(dlogits, W2.T()) * h.one_minus_square();
			Matrix dW1 = matmul(x.T(), dpre);
			Matrix db1 = dpre.col_sum();
			Matrix dE = embed_grad(matmul(dpre, W1.T()), tokens, K, kVocab);
			// SGD, out of place
			Matrix *weights[] = { &E, &W1, &b1, &W2, &b2 };
			const Matrix *grads[] = { &dE, &dW1, &db1, &dW2, &db2 };
			for (int p = 0; p < 5; p++) {
				Matrix update = *grads[p] * (-cfg.lr);
				*weights[p] = *weights[p] + update;
			}
			std::vector<float> l(B);
			loss.to_host(l.data());
			double sum = 0;
			for (float v : l)
				sum += v;
			std::printf("step %d loss %.6f\n", step + 1, sum / B);
		}
		size_t n;
		double c = checksum({ &E, &W1, &b1, &W2, &b2 }, &n);
		std::printf("checksum %.9e\nparams %zu\n", c, n);
	}
	CUDA_CHECK(cudaStreamSynchronize(stream));
	CUDA_CHECK(cudaStreamDestroy(stream));
	return 0;
}
