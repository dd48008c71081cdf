"""Benchmark of protokube against the local AWS emulator (not a test: it reports, never fails on
a number). Prints one table: figure, budget (DESIGN §8), measured.

usage: bench.py PROTOKUBE_BINARY EMULATOR_URL
"""

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

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


def timed_runs(argv, env, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main():
    binary, url = sys.argv[1], sys.argv[2]
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
    small = timed_runs(discover, env, 20)

    add_unrelated(url, 4990)
    reset_requests(url)
    subprocess.run(discover, env=env, check=True, stdout=subprocess.DEVNULL)
    calls_large = len(requests(url))
    large = timed_runs(discover, env, 20)

    version = timed_runs([binary, "--version"], {"PATH": os.environ["PATH"]}, 200)
    size = os.path.getsize(binary)

    small_ms = statistics.median(small) * 1000
    large_ms = statistics.median(large) * 1000
    rows = [
        ("discover-volumes, 10 unrelated volumes: API calls", "1 DescribeVolumes", "%d" % calls_small),
        ("discover-volumes, 5000 unrelated volumes: API calls", "1 DescribeVolumes", "%d" % calls_large),
        ("discover-volumes, 10 unrelated: median wall", "-", "%.1f ms" % small_ms),
        ("discover-volumes, 5000 unrelated: median wall", "-", "%.1f ms" % large_ms),
        ("discover-volumes time ratio 5000/10", "<= 1.2", "%.2f" % (large_ms / small_ms)),
        ("protokube --version: median wall", "<= 5 ms", "%.2f ms" % (statistics.median(version) * 1000)),
        ("release binary size (stripped)", "<= 15 MB", "%.1f MB" % (size / 1e6)),
    ]
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-18s  %s" % (width, "figure", "budget", "measured"))
    for name, budget, measured in rows:
        print("%-*s  %-18s  %s" % (width, name, budget, measured))


if __name__ == "__main__":
    main()
