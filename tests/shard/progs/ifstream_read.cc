// SPDX-License-Identifier: MIT
// ifstream_read.cc - `ifstream_read FILE HEADER RECORD`: reads a record file
// the way a C++ trainer does, with std::ifstream: the size from seekg/tellg,
// the header with read(), then the records in batches of 3 with read() into a
// std::vector, one gcount() check per batch, a seekg back to re-read the
// first record, and writes header + records to stdout (byte for byte what it
// read).  Exits 1 when the stream fails or its answers disagree.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

static int fail(const char *what)
{
	std::cerr << "ifstream_read: " << what << std::endl;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return fail("usage: ifstream_read FILE HEADER RECORD");
	const std::streamoff header = std::atoll(argv[2]), record = std::atoll(argv[3]);
	std::ifstream in(argv[1], std::ios::binary);
	if (!in)
		return fail("cannot open");
	in.seekg(0, std::ios::end);
	const std::streamoff size = in.tellg();
	if (size < header || (size - header) % record != 0)
		return fail("size is not header + whole records");
	in.seekg(0, std::ios::beg);
	std::vector<char> head(static_cast<size_t>(header)), batch(static_cast<size_t>(3 * record));
	std::vector<char> out;
	if (header && !in.read(head.data(), header))
		return fail("header read");
	out.insert(out.end(), head.begin(), head.end());
	for (;;) {
		in.read(batch.data(), static_cast<std::streamsize>(batch.size()));
		std::streamsize got = in.gcount();
		if (got % record != 0)
			return fail("a batch ended inside a record");
		out.insert(out.end(), batch.begin(), batch.begin() + got);
		if (!in)
			break;
	}
	if (!in.eof() || static_cast<std::streamoff>(out.size()) != size)
		return fail("did not read to the end");
	in.clear();
	if (size > header) {
		std::vector<char> again(static_cast<size_t>(record));
		in.seekg(header);
		if (!in.read(again.data(), record) || in.tellg() != header + record)
			return fail("seek back");
		for (std::streamoff i = 0; i < record; i++)
			if (again[static_cast<size_t>(i)] != out[static_cast<size_t>(header + i)])
				return fail("re-read differs");
	}
	std::fwrite(out.data(), 1, out.size(), stdout);
	return 0;
}
