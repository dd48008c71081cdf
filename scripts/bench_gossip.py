"""The gossip member's figures, for scripts/bench: the time from a peer's publication to the line
in the hosts file; the idle CPU and memory of a member with 30 peers, beside a Go peer on the
same mesh and memberlist libraries kOps links (the project's tests/gossip-peer, or kOps' own
protokube when KOPS_GOSSIP_PEER names a kops-gossip-peer binary); the seconds from a kill to
every survivor knowing it, in clusters of protokube members alone, mixed with Go peers, and of
Go peers alone (kOps' memberlist settings); and the TCP connections one published change costs a
cluster of 30. Each node of a cluster on a loopback address of its own (127.0.0.x).
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


def listening(port, within=30):
    """Waits until something accepts TCP connections on 127.0.0.1:`port`."""
    start = time.perf_counter()
    while time.perf_counter() - start < within:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on 127.0.0.1:%d after %d s" % (port, within))


def active_opens():
    """The kernel's count of TCP connections opened (all processes: the machine is quiet)."""
    with open("/proc/net/snmp") as f:
        lines = [line.split() for line in f if line.startswith("Tcp:")]
    return int(lines[1][lines[0].index("ActiveOpens")])


def metric(path, name):
    try:
        for line in open(path):
            if line.startswith(name + " "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


class Cluster:
    """Nodes on 127.0.0.x, mesh and memberlist on two ports every node shares."""

    def __init__(self, binary, env, peer_binary, first_octet):
        self.binary, self.env, self.peer_binary = binary, env, peer_binary
        self.mesh, self.list = free_port(), free_port()
        self.next = first_octet
        self.work = tempfile.mkdtemp()
        self.nodes = []  # (kind, process, metrics path or None)

    def ip(self):
        ip = "127.0.0.%d" % self.next
        self.next += 1
        return ip

    def protokube(self, seed):
        ip = self.ip()
        root = os.path.join(self.work, ip)
        os.makedirs(os.path.join(root, "etc"))
        open(os.path.join(root, "etc/hosts"), "w").write("127.0.0.1\tlocalhost\n")
        metrics = os.path.join(root, "gossip.prom")
        env = dict(self.env, PROTOKUBE_ROOT=root, PROTOKUBE_CLUSTER_ID="c.k8s.local",
                   PROTOKUBE_INSTANCE_ID="i-bench-" + ip.replace(".", "-"),
                   PROTOKUBE_INTERNAL_IP=ip,
                   PROTOKUBE_GOSSIP_LISTEN="%s:%d" % (ip, self.mesh),
                   PROTOKUBE_GOSSIP_LISTEN_SECONDARY="%s:%d" % (ip, self.list))
        args = [self.binary, "gossip", "--metrics-file", metrics]
        if seed:
            args += ["--gossip-seed", seed, "--gossip-seed-secondary", seed]
        process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.nodes.append(("protokube", process, metrics))
        return ip

    def go(self, seed, name=None):
        ip = self.ip()
        args = [self.peer_binary, "--name", name or "go-" + ip,
                "--mesh-listen", "%s:%d" % (ip, self.mesh), "--memberlist-listen", "%s:%d" % (ip, self.list)]
        if seed:
            args += ["--mesh-seed", "%s:%d" % (seed, self.mesh), "--memberlist-seed", "%s:%d" % (seed, self.list)]
        process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, bufsize=1)
        state = {"peers": None}
        self.nodes.append(("go", process, state))
        import threading, json

        def follow():
            for line in process.stdout:
                try:
                    state["peers"] = json.loads(line).get("peers", {}).get("memberlist")
                except ValueError:
                    pass
        threading.Thread(target=follow, daemon=True).start()
        return ip

    def members(self, node):
        kind, process, where = node
        if kind == "protokube":
            return metric(where, 'protokube_gossip_peers{protocol="memberlist"}')
        return where["peers"]

    def wait(self, alive, count, within):
        start = time.perf_counter()
        while time.perf_counter() - start < within:
            if all(self.members(n) == count for n in alive):
                return time.perf_counter() - start
            time.sleep(0.05)
        return None

    def close(self):
        for _, process, _ in self.nodes:
            process.kill()
            process.wait()


def death(binary, env, peer_binary, protokubes, gos, first_octet):
    """Seconds from killing one protokube member (if any) and one Go peer (if any) to every
    survivor counting them out."""
    cluster = Cluster(binary, env, peer_binary, first_octet)
    try:
        seed = None
        for _ in range(gos):
            ip = cluster.go(seed)
            seed = seed or ip
        for _ in range(protokubes):
            ip = cluster.protokube(seed)
            seed = seed or ip
        total = protokubes + gos
        if cluster.wait(cluster.nodes, total - 1, 90) is None:
            return None
        victims = []
        if gos:
            victims.append(cluster.nodes[gos - 1])
        if protokubes:
            victims.append(cluster.nodes[-1])
        for _, process, _ in victims:
            process.kill()
        alive = [n for n in cluster.nodes if n not in victims]
        return cluster.wait(alive, total - 1 - len(victims), 120)
    finally:
        cluster.close()


def connections_per_change(binary, env, peer_binary, size=30):
    """TCP connections opened in the 5 s after a Go peer (dns-controller) publishes a record
    into a cluster of `size` - 1 protokube members and itself, less an idle 5 s before."""
    cluster = Cluster(binary, env, peer_binary, 100)
    try:
        seed = cluster.go(None, "dns-controller")
        for _ in range(size - 1):
            cluster.protokube(seed)
        cluster.wait(cluster.nodes, size - 1, 120)
        time.sleep(5)
        idle_before = active_opens()
        time.sleep(5)
        idle_opens = active_opens() - idle_before
        publisher = cluster.nodes[0][1]
        before = active_opens()
        publisher.stdin.write("publish change.c.k8s.local A 10.9.9.9\n")
        publisher.stdin.flush()
        time.sleep(5)
        return max(0, active_opens() - before - idle_opens), idle_opens
    finally:
        cluster.close()


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
        # It listens once the cloud has named the seeds; kOps' peers give up a join refused.
        listening(memberlist)
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
        seconds = lambda t: "%.1f s" % t if t is not None else "not within 2 min"
        alone = death(binary, env, peer_binary, 5, 0, 11)
        mixed = death(binary, env, peer_binary, 3, 3, 21)
        go_only = death(binary, env, peer_binary, 0, 6, 31)
        change, idle_opens = connections_per_change(binary, env, peer_binary)
        return [
            ("gossip: publish (Go peer, mesh) to the hosts file, median of 5", "<= 1 s",
             "%.0f ms" % (statistics.median(latencies) * 1000)),
            ("gossip: idle member, %d peers (mesh + memberlist): CPU / RSS" % PEERS, "<= 1 % core",
             "%.2f %% / %.1f MiB" % (member_cpu, member_rss)),
            ("gossip: beside it, %s: CPU / RSS" % reference_name, "-",
             "%.2f %% / %.1f MiB" % (reference_cpu, reference_rss)),
            ("gossip: a kill known to every survivor, 5 protokube members", "<= 10 s", seconds(alone)),
            ("gossip: both kills known, 3 protokube + 3 Go peers", "<= 10 s", seconds(mixed)),
            ("gossip: a kill known, 6 Go peers (kOps' memberlist settings)", "-", seconds(go_only)),
            ("gossip: TCP connections one published change costs a cluster of 30", "-",
             "%d (idle: %d in 5 s)" % (change, idle_opens)),
        ]
    finally:
        for child in children:
            child.kill()
            child.wait()
