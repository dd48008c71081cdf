"""Benchmark of protokube against the local AWS emulator (not a test: it reports, never fails on
a number). Prints one table: figure, budget (docs/performance.md), measured.

usage: bench.py PROTOKUBE_BINARY EMULATOR_URL
"""

import json
import math
import os
import stat
import resource
import statistics
import subprocess
import sys
import time
import urllib.request

import bench_gossip

REGION = "us-east-1"
CLUSTER = "ha.example.com"
HERE = os.path.dirname(os.path.abspath(__file__))


def requests(url):
    with urllib.request.urlopen(url + "/_protokube/requests") as r:
        return json.load(r)


def reset_requests(url):
    urllib.request.urlopen(urllib.request.Request(url + "/_protokube/requests/reset", method="POST")).read()


def seed(url, unrelated):
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "seed_cluster.py"), url, REGION, CLUSTER, "--unrelated", str(unrelated)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)


def add_unrelated(url, count):
    import boto3

    ec2 = boto3.client("ec2", endpoint_url=url, region_name=REGION,
                       aws_access_key_id="bench", aws_secret_access_key="bench")
    for i in range(count):
        ec2.create_volume(AvailabilityZone=REGION + "a", Size=1,
                          TagSpecifications=[{"ResourceType": "volume",
                                              "Tags": [{"Key": "Name", "Value": "more-%d" % i}]}])


def child_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_runs(argv, env, runs):
    """Wall time and protokube's own CPU time (user + system) of each run."""
    times, cpu = [], []
    for _ in range(runs):
        cpu_before = child_cpu()
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        cpu.append(child_cpu() - cpu_before)
    return times, cpu


def nitro_device(root, volume, loop, index):
    """The volume as a Nitro instance shows it under `root`: an NVMe namespace node with the loop
    device's numbers, the udev by-id link to it, and the controller serial in sysfs."""
    name = "nvme%dn1" % index
    rdev = os.stat(loop).st_rdev
    os.makedirs(os.path.join(root, "dev/disk/by-id"), exist_ok=True)
    os.mknod(os.path.join(root, "dev", name), 0o600 | stat.S_IFBLK, rdev)
    os.symlink("../../" + name, os.path.join(
        root, "dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_" + volume.replace("-", "")))
    serial = os.path.join(root, "sys/block", name, "device/serial")
    os.makedirs(os.path.dirname(serial))
    with open(serial, "w") as f:
        f.write(volume.replace("-", "") + "\n")


def sh(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def bench_mount(binary, url, env):
    """Cold `mount` of a blank 256 MiB loop device (the emulator attaches at once, so the whole
    time is protokube's: attach call, waits, probe, mkfs.ext4, mount), then a converged rerun:
    its API calls and whether it wrote anything."""
    import tempfile

    work = tempfile.mkdtemp(prefix="protokube-bench-")
    image = os.path.join(work, "disk.img")
    with open(image, "wb") as f:
        f.truncate(256 << 20)
    loop = sh("losetup", "--find", "--show", image)
    root = os.path.join(work, "root")
    try:
        import boto3

        ec2 = boto3.client("ec2", endpoint_url=url, region_name=REGION,
                           aws_access_key_id="bench", aws_secret_access_key="bench")
        cluster = "mount.example.com"
        volume = ec2.create_volume(AvailabilityZone=REGION + "a", Size=20, TagSpecifications=[{
            "ResourceType": "volume", "Tags": [
                {"Key": "KubernetesCluster", "Value": cluster},
                {"Key": "k8s.io/role/master", "Value": "1"},
                {"Key": "k8s.io/etcd/main", "Value": "a/a"}]}])["VolumeId"]
        nitro_device(root, volume, loop, 1)
        argv = [binary, "mount", "--master", "--cluster-id", cluster, "--root", root, "-o", "json"]
        reset_requests(url)
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        cold = time.perf_counter() - start
        cold_calls = [r["operation"] for r in requests(url)]
        state = os.path.join(root, "var/lib/protokube/state.json")
        mtime = os.stat(state).st_mtime_ns
        reset_requests(url)
        start = time.perf_counter()
        out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
        warm = time.perf_counter() - start
        warm_calls = [r["operation"] for r in requests(url)]
        changed = json.loads(out)["changed"]
        writes = 0 if os.stat(state).st_mtime_ns == mtime and not changed else 1
        return cold, cold_calls, warm, warm_calls, writes
    finally:
        subprocess.run(["umount", os.path.join(root, "mnt", "master-" + volume)], capture_output=True)
        subprocess.run(["losetup", "-d", loop], capture_output=True)
        subprocess.run(["rm", "-rf", work])


def snapshot_mtimes(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            out[path] = os.lstat(path).st_mtime_ns
    return out


# The shipped timer and the account-wide limits the fleet figure is computed against.
TIMER_SECONDS = 180
VERIFY_INTERVAL_SECONDS = 15 * 60
ROUTE53_PER_SECOND = 5  # per account (Route53 quotas)
EC2_DESCRIBE_PER_SECOND = 20  # non-mutating requests, per region (EC2 request throttling)


def calls_of(argv, env, url):
    """The (service, operation) of every AWS call one run makes."""
    reset_requests(url)
    run = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit("%s exited %d:\n%s" % (" ".join(argv), run.returncode, run.stderr))
    return [(r["service"], r["operation"]) for r in requests(url)]


NODEUP_LOOP_SECONDS = 60  # the old daemon's loop under nodeup's protokube.service


def per_node_hour(trusted, full, period=TIMER_SECONDS, trusted_for=VERIFY_INTERVAL_SECONDS):
    """(Route53, EC2) calls per node-hour, one run every `period` seconds: a full check at the
    first run once the check is `trusted_for` seconds old (the interval; a worker's, less its
    jitter of at most a tenth, in the worst case), trusted runs between."""
    runs = 3600 / period
    fulls = 3600 / (math.ceil(trusted_for / period) * period)
    count = lambda calls, service: sum(1 for s, _ in calls if s == service)
    route53 = fulls * count(full, "route53") + (runs - fulls) * count(trusted, "route53")
    ec2 = fulls * count(full, "ec2") + (runs - fulls) * count(trusted, "ec2")
    return route53, ec2


def fleet(route53_hour, ec2_hour):
    """Nodes one account can run within both limits."""
    limits = []
    if route53_hour:
        limits.append(int(ROUTE53_PER_SECOND * 3600 / route53_hour))
    if ec2_hour:
        limits.append(int(EC2_DESCRIBE_PER_SECOND * 3600 / ec2_hour))
    return min(limits) if limits else "no limit (asks nothing)"


def bench_sync(binary, baseline, url, env, ids):
    """`sync` as master a of the seeded HA cluster with two blank loop devices and a hosted
    zone: a cold run (the emulator attaches at once, so all of it is protokube's own time), then
    converged reruns of the baseline binary (before) and of this one (after): AWS calls, files
    written, CPU; this one's full check; and a worker's calls."""
    import tempfile

    work = tempfile.mkdtemp(prefix="protokube-sync-")
    root = os.path.join(work, "root")
    loops = []
    try:
        # The zone bench_dns made (it holds 10 000 other records by now).
        for index, key in enumerate(("main", "events"), start=1):
            image = os.path.join(work, key + ".img")
            with open(image, "wb") as f:
                f.truncate(256 << 20)
            loop = sh("losetup", "--find", "--show", image)
            loops.append(loop)
            volume = ids["volumes"]["%s-a" % key]
            nitro_device(root, volume, loop, index)
        spec = os.path.join(HERE, "..", "tests", "fixtures", "kops", "cluster-completed", "ha.yaml")
        argv = lambda b, *extra: [b, "sync", "--master", "--cluster-spec", spec, "--root", root,
                                  "--zone", "example.com", "-o", "json", *extra]
        cold, _ = timed_runs(argv(binary), env, 1)
        out = {"cold": cold[0]}
        if baseline:
            subprocess.run(argv(baseline), env=env, check=True, stdout=subprocess.DEVNULL)
            calls = calls_of(argv(baseline), env, url)
            warm, cpu = timed_runs(argv(baseline), env, 20)
            out["before"] = {"calls": calls, "full": calls, "wall": statistics.median(warm),
                             "cpu": statistics.median(cpu)}
        # The first rerun checks in full and records it; the ones after trust it.
        subprocess.run(argv(binary), env=env, check=True, stdout=subprocess.DEVNULL)
        before = snapshot_mtimes(root)
        calls = calls_of(argv(binary), env, url)
        warm, cpu = timed_runs(argv(binary), env, 20)
        writes = sum(1 for path, mtime in snapshot_mtimes(root).items() if before.get(path) != mtime)
        full = calls_of(argv(binary, "--verify-interval", "0"), env, url)
        out["after"] = {"calls": calls, "full": full, "wall": statistics.median(warm),
                        "cpu": statistics.median(cpu), "writes": writes}
        kinds = {"HA master, Route53": (calls, full)}
        # The same master of a gossip cluster: names in the hosts file.
        gossip = lambda *extra: argv(binary, "--dns", "hosts", *extra)
        subprocess.run(gossip("--verify-interval", "0"), env=env, check=True, stdout=subprocess.DEVNULL)
        kinds["gossip master"] = (calls_of(gossip(), env, url),
                                  calls_of(gossip("--verify-interval", "0"), env, url))
        kinds["LB-cluster master, a name held by dns-controller"] = lb_master(binary, url, env, argv)
        worker_root = os.path.join(work, "worker")
        os.makedirs(worker_root)
        worker = lambda *extra: [binary, "sync", "--cluster-spec", spec, "--root", worker_root,
                                 "-o", "json", *extra]
        subprocess.run(worker("--dns", "hosts"), env=env, check=True, stdout=subprocess.DEVNULL)
        out["worker_hosts"] = calls_of(worker("--dns", "hosts"), env, url)
        kinds["gossip worker"] = (out["worker_hosts"],
                                  calls_of(worker("--dns", "hosts", "--verify-interval", "0"), env, url))
        out["worker_route53"] = calls_of(worker(), env, url)
        kinds["Route53 worker"] = (out["worker_route53"], calls_of(worker("--verify-interval", "0"), env, url))
        kinds["gossip worker, kOps 1.36 unit"] = unit_136_worker(binary, url, env, work)
        out["kinds"] = kinds
        return out
    finally:
        for line in open("/proc/self/mountinfo"):
            mountpoint = line.split(" ")[4]
            if mountpoint.startswith(root):
                subprocess.run(["umount", mountpoint], capture_output=True)
        for loop in loops:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        subprocess.run(["rm", "-rf", work])


def lb_master(binary, url, env, argv):
    """Master a once its cluster has an API load balancer (kOps' alias at `api.<cluster>`) and
    dns-controller holds `api.internal` (addresses, no ownership TXT): (converged calls, full
    check calls). Route53 is put back as it was afterwards."""
    import boto3
    import yaml

    spec_path = argv(binary)[argv(binary).index("--cluster-spec") + 1]
    with open(spec_path) as f:
        doc = yaml.safe_load(f)
    doc["spec"]["api"] = {"loadBalancer": {"type": "Public", "class": "Network"}}
    lb_spec = os.path.join(os.path.dirname(argv(binary)[argv(binary).index("--root") + 1]), "lb.yaml")
    with open(lb_spec, "w") as f:
        yaml.safe_dump(doc, f)
    r53 = boto3.client("route53", endpoint_url=url, region_name=REGION,
                       aws_access_key_id="bench", aws_secret_access_key="bench")
    zone = r53.list_hosted_zones_by_name(DNSName="example.com")["HostedZones"][0]["Id"]
    api_names = ("api." + CLUSTER, "api.internal." + CLUSTER)

    def record_sets():
        found = []
        for name in api_names:
            page = r53.list_resource_record_sets(HostedZoneId=zone, StartRecordName=name, MaxItems="20")
            found += [r for r in page["ResourceRecordSets"] if r["Name"].rstrip(".") == name]
        return found

    held = record_sets()
    changes = [{"Action": "DELETE", "ResourceRecordSet": r} for r in held]
    changes.append({"Action": "CREATE", "ResourceRecordSet": {
        "Name": "api." + CLUSTER, "Type": "A", "AliasTarget": {
            "HostedZoneId": "Z26RNL4JYFTOTI", "EvaluateTargetHealth": False,
            "DNSName": "api-ha-example-com-0123456789.elb.us-east-1.amazonaws.com"}}})
    changes.append({"Action": "CREATE", "ResourceRecordSet": {
        "Name": "api.internal." + CLUSTER, "Type": "A", "TTL": 60,
        "ResourceRecords": [{"Value": "10.99.0.1"}]}})
    r53.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": changes})
    try:
        lb = lambda *extra: [a if a != spec_path else lb_spec for a in argv(binary, *extra)]
        subprocess.run(lb("--verify-interval", "0"), env=env, check=True, stdout=subprocess.DEVNULL)
        return calls_of(lb(), env, url), calls_of(lb("--verify-interval", "0"), env, url)
    finally:
        kept = {(r["Name"], r["Type"]) for r in held}
        back = [{"Action": "DELETE", "ResourceRecordSet": r} for r in record_sets()
                if (r["Name"], r["Type"]) not in kept]
        back += [{"Action": "UPSERT", "ResourceRecordSet": r} for r in held]
        r53.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": back})


def unit_136_worker(binary, url, env, work):
    """A worker of the cluster under kOps 1.36's unit (no cluster, no role: the instance's tags
    say them), started twice as nodeup's service would be: (calls of the second start's run,
    calls of a full check)."""
    import boto3
    import signal

    ec2 = boto3.client("ec2", endpoint_url=url, region_name=REGION,
                       aws_access_key_id="bench", aws_secret_access_key="bench")
    image = ec2.describe_images()["Images"][0]["ImageId"]
    worker = ec2.run_instances(ImageId=image, InstanceType="t3.medium", MinCount=1, MaxCount=1,
                               Placement={"AvailabilityZone": REGION + "a"},
                               TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                   {"Key": "KubernetesCluster", "Value": CLUSTER}]}])
    root = os.path.join(work, "worker-136")
    os.makedirs(root)
    unit_env = {k: v for k, v in env.items() if k != "PROTOKUBE_CLUSTER_ID"}
    unit_env.update({"PROTOKUBE_ROOT": root,
                     "PROTOKUBE_INSTANCE_ID": worker["Instances"][0]["InstanceId"]})
    argv = [binary, "--cloud=aws", "--containerized=false", "--gossip=true", "--v=4",
            "--gossip-listen=0.0.0.0:3999", "--gossip-protocol=mesh", "--gossip-secret=s3cr3t"]

    def one_start(**extra_env):
        reset_requests(url)
        daemon = subprocess.Popen(argv, env={**unit_env, **extra_env}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        for line in daemon.stderr:
            if "run finished" in line:
                break
        daemon.send_signal(signal.SIGTERM)
        daemon.communicate(timeout=30)
        return [(r["service"], r["operation"]) for r in requests(url)]

    one_start()
    second = one_start()
    return second, one_start(PROTOKUBE_VERIFY_INTERVAL="0")


def bench_render(binary):
    """render-manifests for the largest reference spec (master: control plane and kube-proxy),
    cold and converged; counts files whose mtime changed on the rerun."""
    import glob
    import tempfile

    spec = os.path.join(HERE, "..", "tests", "fixtures", "kops", "cluster-completed", "complex.yaml")
    root = tempfile.mkdtemp(prefix="protokube-render-")
    try:
        argv = [binary, "render-manifests", "--master", "--cluster-spec", spec, "--root", root, "-o", "json"]
        env = {"PATH": os.environ["PATH"]}
        cold, _ = timed_runs(argv, env, 1)
        files = glob.glob(os.path.join(root, "etc/kubernetes/manifests/*"))
        before = {f: os.stat(f).st_mtime_ns for f in files}
        warm, warm_cpu = timed_runs(argv, env, 20)
        writes = sum(1 for f in files if os.stat(f).st_mtime_ns != before[f])
        return cold[0], statistics.median(warm), statistics.median(warm_cpu), len(files), writes
    finally:
        subprocess.run(["rm", "-rf", root])


def bench_dns(binary, url, env):
    """publish-dns to Route53: a cold run, then converged reruns with 10 and with 10 000 other
    records in the zone: Route53 calls and time."""
    import boto3

    r53 = boto3.client("route53", endpoint_url=url, region_name=REGION,
                       aws_access_key_id="bench", aws_secret_access_key="bench")
    zone = r53.create_hosted_zone(Name="example.com", CallerReference="bench")["HostedZone"]["Id"]

    def add(prefix, count):
        for start in range(0, count, 500):
            changes = [{"Action": "UPSERT", "ResourceRecordSet": {
                "Name": "%s-%d.example.com" % (prefix, i), "Type": "A", "TTL": 300,
                "ResourceRecords": [{"Value": "192.0.2.1"}]}} for i in range(start, min(count, start + 500))]
            r53.change_resource_record_sets(HostedZoneId=zone, ChangeBatch={"Changes": changes})

    add("small", 10)
    argv = [binary, "publish-dns", "--master", "--zone", "example.com", "-o", "json"]
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)

    def converged(runs):
        reset_requests(url)
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        route53_calls = [r["operation"] for r in requests(url) if r["service"] == "route53"]
        times, cpu = timed_runs(argv, env, runs)
        return route53_calls, (statistics.median(times), statistics.median(cpu))

    small_calls, small_time = converged(20)
    add("large", 10000)
    large_calls, large_time = converged(20)
    return small_calls, small_time, large_calls, large_time


def names(calls):
    return ", ".join(op if service != "route53" else "route53 " + op.split(" ")[0] + " " + op.rsplit("/", 1)[-1]
                     for service, op in calls) or "none"


def main():
    binary, url = sys.argv[1], sys.argv[2]
    baseline = sys.argv[3] if len(sys.argv) > 3 else None
    ids = seed(url, 10)
    env = {
        "PATH": os.environ["PATH"],
        "AWS_ENDPOINT_URL": url, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        "PROTOKUBE_CLUSTER_ID": CLUSTER, "PROTOKUBE_INSTANCE_ID": ids["instances"]["a"],
        "PROTOKUBE_AVAILABILITY_ZONE": REGION + "a", "PROTOKUBE_REGION": REGION,
    }
    discover = [binary, "discover-volumes", "-o", "json"]
    subprocess.run(discover, env=env, check=True, stdout=subprocess.DEVNULL)  # warm the emulator

    reset_requests(url)
    subprocess.run(discover, env=env, check=True, stdout=subprocess.DEVNULL)
    calls_small = len(requests(url))
    small, small_cpu = timed_runs(discover, env, 20)

    # mount before the account fills up, so the emulator's own filtering cost stays small.
    cold, cold_calls, warm, warm_calls, writes = bench_mount(binary, url, env)
    dns_small_calls, dns_small, dns_large_calls, dns_large = bench_dns(binary, url, env)
    sync = bench_sync(binary, baseline, url, env, ids)

    add_unrelated(url, 4990)
    reset_requests(url)
    subprocess.run(discover, env=env, check=True, stdout=subprocess.DEVNULL)
    calls_large = len(requests(url))
    large, large_cpu = timed_runs(discover, env, 5)

    render_cold, render_warm, render_warm_cpu, render_files, render_writes = bench_render(binary)

    gossip = bench_gossip.bench_gossip(binary, env)

    version, _ = timed_runs([binary, "--version"], {"PATH": os.environ["PATH"]}, 200)
    size = os.path.getsize(binary)

    small_ms = statistics.median(small) * 1000
    large_ms = statistics.median(large) * 1000
    small_cpu_ms = statistics.median(small_cpu) * 1000
    large_cpu_ms = statistics.median(large_cpu) * 1000
    rows = []
    for label in ("before", "after"):
        if label not in sync:
            continue
        figures = sync[label]
        # Before, every run asked everything ("full" is its converged run).
        route53_hour, ec2_hour = per_node_hour(figures["calls"], figures["full"])
        budget = lambda b: b if label == "after" else "-"
        rows += [
            ("sync converged (%s): AWS calls" % label, budget("1 DescribeInstances"),
             "%d (%s)" % (len(figures["calls"]), names(figures["calls"]))),
            ("sync converged (%s): median protokube CPU / wall" % label, budget("<= 15 ms CPU"),
             "%.1f ms / %.1f ms" % (figures["cpu"] * 1000, figures["wall"] * 1000)),
            ("sync (%s): Route53 / EC2 calls per master-hour, %d-min timer" % (label, TIMER_SECONDS // 60),
             "-", "%d / %d" % (route53_hour, ec2_hour)),
            ("sync (%s): masters per account (Route53 5/s, EC2 describe 20/s)" % label,
             budget(">= 3000"), "%s" % fleet(route53_hour, ec2_hour)),
        ]
    for kind, (converged, full) in sync["kinds"].items():
        span = VERIFY_INTERVAL_SECONDS * (0.9 if "worker" in kind else 1)
        timer = per_node_hour(converged, full, TIMER_SECONDS, span)
        loop = per_node_hour(converged, full, NODEUP_LOOP_SECONDS, span)
        goal = {"HA master, Route53": ">= 3000", "gossip master": ">= 3000",
                "LB-cluster master, a name held by dns-controller": ">= 3000",
                "gossip worker": ">= 15000", "gossip worker, kOps 1.36 unit": ">= 15000"}.get(kind, "-")
        rows += [
            ("fleet, %s: AWS calls per run, converged / full check" % kind, "-",
             "%d (%s) / %d (%s)" % (len(converged), names(converged), len(full), names(full))),
            ("fleet, %s: nodes per account, %d-min timer / 1-min loop" % (kind, TIMER_SECONDS // 60),
             goal + " (timer)", "%s / %s" % (fleet(*timer), fleet(*loop))),
        ]
    after = sync["after"]
    rows += [
        ("sync full check (--verify-interval 0): AWS calls", "<= 3", "%d (%s)" % (len(after["full"]), names(after["full"]))),
        ("sync converged: file writes", "0", "%d" % after["writes"]),
        ("sync cold, 2 blank 256 MiB volumes, instant attach: wall", "<= 1 s beyond attach", "%.0f ms" % (sync["cold"] * 1000)),
        ("sync converged, worker, hosts DNS (gossip): AWS calls", "0", "%d (%s)" % (len(sync["worker_hosts"]), names(sync["worker_hosts"]))),
        ("sync converged, worker, Route53 cluster: AWS calls", "0", "%d" % len(sync["worker_route53"])),
    ]
    rows += [
        ("discover-volumes, 10 unrelated volumes: API calls", "1 DescribeVolumes", "%d" % calls_small),
        ("discover-volumes, 5000 unrelated volumes: API calls", "1 DescribeVolumes", "%d" % calls_large),
        ("discover-volumes, 10 unrelated: median protokube CPU", "-", "%.1f ms" % small_cpu_ms),
        ("discover-volumes, 5000 unrelated: median protokube CPU", "-", "%.1f ms" % large_cpu_ms),
        ("discover-volumes CPU ratio 5000/10", "<= 1.2", "%.2f" % (large_cpu_ms / small_cpu_ms)),
        ("discover-volumes, 10 unrelated: median wall", "-", "%.1f ms" % small_ms),
        ("discover-volumes, 5000 unrelated: median wall (emulator filters in Python)", "-", "%.1f ms" % large_ms),
        ("mount, cold (blank 256 MiB device, instant attach): wall", "<= 1 s beyond attach", "%.0f ms" % (cold * 1000)),
        ("mount, cold: AWS calls", "-", "%d (%s)" % (len(cold_calls), ", ".join(cold_calls))),
        ("mount, converged rerun: AWS calls", "1 DescribeVolumes", "%d (%s)" % (len(warm_calls), ", ".join(warm_calls))),
        ("mount, converged rerun: file writes", "0", "%d" % writes),
        ("mount, converged rerun: wall", "-", "%.0f ms" % (warm * 1000)),
        ("render-manifests, complex.yaml, cold: wall (%d manifests)" % render_files, "-", "%.1f ms" % (render_cold * 1000)),
        ("render-manifests, converged rerun: median wall / CPU", "-", "%.1f ms / %.1f ms" % (render_warm * 1000, render_warm_cpu * 1000)),
        ("render-manifests, converged rerun: file writes", "0", "%d" % render_writes),
        ("publish-dns converged, 10-record zone: Route53 calls", "-", "%d (%s)" % (len(dns_small_calls), ", ".join(dns_small_calls))),
        ("publish-dns converged, 10 000-record zone: Route53 calls", "same", "%d" % len(dns_large_calls)),
        ("publish-dns converged, 10 / 10 000 records: median protokube CPU", "-", "%.1f ms / %.1f ms" % (dns_small[1] * 1000, dns_large[1] * 1000)),
        ("publish-dns CPU ratio 10 000/10", "<= 1.2", "%.2f" % (dns_large[1] / dns_small[1])),
        ("publish-dns converged, 10 / 10 000 records: median wall", "-", "%.1f ms / %.1f ms" % (dns_small[0] * 1000, dns_large[0] * 1000)),
        ("publish-dns wall ratio 10 000/10 (the emulator sorts the zone per read)", "<= 1.2", "%.2f" % (dns_large[0] / dns_small[0])),
        ("protokube --version: median wall", "<= 5 ms", "%.2f ms" % (statistics.median(version) * 1000)),
        ("release binary size (stripped)", "<= 15 MB", "%.1f MB" % (size / 1e6)),
    ] + gossip
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-22s  %s" % (width, "figure", "budget", "measured"))
    for name, budget, measured in rows:
        print("%-*s  %-22s  %s" % (width, name, budget, measured))


if __name__ == "__main__":
    main()
