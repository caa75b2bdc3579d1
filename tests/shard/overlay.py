# SPDX-License-Identifier: MIT
#
# overlay.py - write safety's cases 1-6 (issue 21) as a Python program run
# under `ddprun -n 2 python3 overlay.py run` by tests/shard/test_write_overlay.sh.
# Every rank runs the same code at the same time; each checks that it reads
# back what it wrote (AssertionError: exit 1).  Modes:
#   prepare        (no ddprun) data.txt = v1, out/ with app, trunc, reopen,
#                  empty/
#   run            cases 1-6 on every rank
#   after          (no ddprun) rank 0's files hold rank 0's data only
#   rerun-prepare  (no ddprun) the user deletes cache.txt, data.txt = v2
#   rerun          case 1 again: the cache a rank uses matches data.txt
import os
import sys

rank = os.environ.get("RANK", "0")
me = "rank " + rank
tmpdir = os.environ.get("OVL_TMP", "/tmp")


def put(path, text, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = os.open(path, flags, 0o644)
    os.write(fd, text.encode())
    os.close(fd)


def get(path):
    with open(path) as f:
        return f.read()


def expect(path, want):
    got = get(path)
    assert got == want, f"{me}: {path} holds {got!r}, not {want!r}"


def cache():
    """Load cache.txt if it exists, else build it from data.txt and save it."""
    want = get("data.txt").strip().upper()
    if os.path.exists("cache.txt"):
        got = get("cache.txt")
        how = "cache"
    else:
        got = want
        with open("cache.txt", "w") as f:
            f.write(got)
        how = "built"
    print(f"{me} {how} {got}", flush=True)
    assert got == want, f"{me}: cache.txt holds {got!r}, data.txt says {want!r}"


def run():
    if not os.environ.get("OVL_NO_LIVE_CACHE"):
        cache()
    # 2: a temporary folder
    p = os.path.join(tmpdir, "ckpt.txt")
    put(p, me)
    expect(p, me)
    # 3: path forms
    put("/proc/self/cwd/out/a.txt", me)
    expect("out/a.txt", me)
    dfd = os.open("out", os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open("b.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dfd)
    os.write(fd, me.encode())
    os.close(fd)
    expect("out/b.txt", me)
    put(f"/proc/self/fd/{dfd}/c.txt", me)
    expect("out/c.txt", me)
    put(f"/dev/fd/{dfd}/d.txt", me)
    expect("out/d.txt", me)
    os.close(dfd)
    # 4: the "latest" idiom
    put("out/ckpt", "ckpt of " + me)
    if os.path.lexists("out/latest.tmp"):
        os.remove("out/latest.tmp")
    os.symlink("ckpt", "out/latest.tmp")
    os.replace("out/latest.tmp", "out/latest")
    expect("out/latest", "ckpt of " + me)
    assert os.readlink("out/latest") == "ckpt"
    # 5: O_APPEND, O_TRUNC without O_CREAT, /proc/self/fd reopen
    put("out/app", me, os.O_WRONLY | os.O_APPEND)
    got = get("out/app")
    assert got.startswith("orig\n") and got.endswith(me), f"{me}: out/app holds {got!r}"
    put("out/trunc", me, os.O_WRONLY | os.O_TRUNC)
    expect("out/trunc", me)
    rd = os.open("out/reopen", os.O_RDONLY)
    put(f"/proc/self/fd/{rd}", me, os.O_WRONLY | os.O_TRUNC)
    os.close(rd)
    expect("out/reopen", me)
    # 6: folders (a rank other than 0 removes rank 0's empty folder)
    os.makedirs("out/new", exist_ok=True)
    put("out/new/f", me)
    expect("out/new/f", me)
    # a run folder made, then entered (as hydra does)
    home = os.getcwd()
    os.makedirs("out/hy/run", exist_ok=True)
    os.chdir("out/hy/run")
    put("log.txt", me)
    expect("log.txt", me)
    os.chdir(home)
    expect("out/hy/run/log.txt", me)
    if rank != "0":
        os.rmdir("out/empty")
        assert not os.path.exists("out/empty")
        os.mkdir("out/only1")
        assert os.path.isdir("out/only1")
    print(f"{me} ok", flush=True)


def after():
    for f in ["a.txt", "b.txt", "c.txt", "d.txt", "trunc", "reopen", "new/f", "hy/run/log.txt"]:
        expect("out/" + f, "rank 0")
    expect(os.path.join(tmpdir, "ckpt.txt"), "rank 0")
    expect("out/latest", "ckpt of rank 0")
    expect("out/app", "orig\nrank 0")
    assert not os.path.lexists("out/latest.tmp"), "a stray out/latest.tmp"
    assert os.path.isdir("out/empty"), "rank 0's out/empty is gone"
    assert not os.path.exists("out/only1"), "rank 1's out/only1 is in rank 0's folder"
    print("after ok")


mode = sys.argv[1]
if mode == "prepare":
    os.makedirs("out/empty")
    put("data.txt", "v1\n")
    for f in ["app", "trunc", "reopen"]:
        put("out/" + f, "orig\n")
elif mode == "run":
    run()
elif mode == "after":
    after()
elif mode == "rerun-prepare":
    if os.path.exists("cache.txt"):
        os.remove("cache.txt")
    put("data.txt", "v2\n")
elif mode == "rerun":
    cache()
else:
    sys.exit("usage: overlay.py prepare|run|after|rerun-prepare|rerun")
