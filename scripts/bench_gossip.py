"""The gossip member's figures (issue 48), for scripts/bench: the time from a peer's publication
to the line in the hosts file, and the idle CPU and memory of a member with 30 peers, beside a Go
peer on the same mesh and memberlist libraries kOps links (the project's tests/gossip-peer, or
kOps' own protokube when KOPS_GOSSIP_PEER names a kops-gossip-peer binary).
"""

import os
import socket
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PEERS = 30
IDLE_SECONDS = 30


def free_port():
    while True:
        with socket.socket() as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                    udp.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def go_peer(binary, name, mesh, memberlist, seed_mesh, seed_list):
    return subprocess.Popen(
        [binary, "--name", name, "--mesh-listen", "127.0.0.1:%d" % mesh,
         "--mesh-seed", "127.0.0.1:%d" % seed_mesh,
         "--memberlist-listen", "127.0.0.1:%d" % memberlist,
         "--memberlist-seed", "127.0.0.1:%d" % seed_list],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)


def kops_protokube(binary, hosts, mesh, memberlist, seed_mesh, seed_list):
    open(hosts, "w").close()
    log = open(hosts + ".log", "w")
    return subprocess.Popen(
        [binary, "protokube", "--node-name", "i-kops", "--hosts-file", hosts,
         "--gossip-listen", "127.0.0.1:%d" % mesh, "--gossip-listen-secondary", "127.0.0.1:%d" % memberlist,
         "--gossip-seed", "127.0.0.1:%d" % seed_mesh, "--gossip-seed-secondary", "127.0.0.1:%d" % seed_list],
        stdout=log, stderr=log)


def idle(pid):
    """CPU share of one core and RSS of `pid` over IDLE_SECONDS."""
    before = cpu_seconds(pid)
    time.sleep(IDLE_SECONDS)
    return (cpu_seconds(pid) - before) / IDLE_SECONDS * 100, rss_mib(pid)


def bench_gossip(binary, env):
    work = tempfile.mkdtemp()
    peer_binary = os.path.join(work, "gossip-peer")
    subprocess.run([os.path.join(REPO, "tests/gossip-peer/build"), peer_binary], check=True)
    root = os.path.join(work, "root")
    os.makedirs(os.path.join(root, "etc"))
    hosts = os.path.join(root, "etc/hosts")
    open(hosts, "w").write("127.0.0.1\tlocalhost\n")
    mesh, memberlist = free_port(), free_port()
    member_env = dict(env, PROTOKUBE_ROOT=root, PROTOKUBE_CLUSTER_ID="c.k8s.local",
                      PROTOKUBE_GOSSIP_LISTEN="127.0.0.1:%d" % mesh,
                      PROTOKUBE_GOSSIP_LISTEN_SECONDARY="127.0.0.1:%d" % memberlist)
    member = subprocess.Popen([binary, "gossip"], env=member_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = [member]
    try:
        peers = []
        for i in range(PEERS):
            peers.append(go_peer(peer_binary, "i-peer-%d" % i, free_port(), free_port(), mesh, memberlist))
        children += peers
        kops = os.environ.get("KOPS_GOSSIP_PEER")
        reference, reference_name = peers[0], "Go peer (Debian mesh + memberlist)"
        if kops:
            reference = kops_protokube(kops, os.path.join(work, "kops-hosts"), free_port(), free_port(), mesh, memberlist)
            children.append(reference)
            reference_name = "kOps' protokube (kops-gossip-peer)"
        time.sleep(10)  # joined, topology and full state exchanged
        if reference.poll() is not None:
            raise RuntimeError("the reference peer exited: %s" % open(os.path.join(work, "kops-hosts.log")).read()[-2000:])
        latencies = []
        for i in range(5):
            name = "bench-%d.c.k8s.local" % i
            start = time.perf_counter()
            peers[i + 1].stdin.write("publish %s A 10.1.0.%d\n" % (name, i + 1))
            peers[i + 1].stdin.flush()
            while name not in open(hosts).read():
                if time.perf_counter() - start > 30:
                    break
                time.sleep(0.001)
            latencies.append(time.perf_counter() - start)
        member_cpu, member_rss = idle(member.pid)
        reference_cpu, reference_rss = idle(reference.pid)
        return [
            ("gossip: publish (Go peer, mesh) to the hosts file, median of 5", "<= 1 s",
             "%.0f ms" % (statistics.median(latencies) * 1000)),
            ("gossip: idle member, %d peers (mesh + memberlist): CPU / RSS" % PEERS, "<= 1 % core",
             "%.2f %% / %.1f MiB" % (member_cpu, member_rss)),
            ("gossip: beside it, %s: CPU / RSS" % reference_name, "-",
             "%.2f %% / %.1f MiB" % (reference_cpu, reference_rss)),
        ]
    finally:
        for child in children:
            child.kill()
            child.wait()
