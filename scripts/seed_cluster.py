"""Seeds the local AWS emulator with a kOps-style HA cluster for the demo and the benchmark:
three masters' etcd volumes (members a, b, c in three zones, `main` and `events`, tagged as kOps
tags them) and one running master instance per zone. Prints a JSON object with the ids.

usage: seed_cluster.py ENDPOINT REGION CLUSTER [--unrelated N]
"""

import argparse
import json

import boto3


def tags(pairs):
    return [{"Key": k, "Value": v} for k, v in pairs.items()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("region")
    parser.add_argument("cluster")
    parser.add_argument("--unrelated", type=int, default=0, help="unrelated volumes to add")
    args = parser.parse_args()
    ec2 = boto3.client(
        "ec2",
        endpoint_url=args.endpoint,
        region_name=args.region,
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )
    zones = [args.region + suffix for suffix in ("a", "b", "c")]
    members = ["a", "b", "c"]
    image = ec2.describe_images()["Images"][0]["ImageId"]
    out = {"volumes": {}, "instances": {}}
    for member, zone in zip(members, zones):
        for key in ("main", "events"):
            volume = ec2.create_volume(
                AvailabilityZone=zone,
                Size=20,
                VolumeType="gp3",
                TagSpecifications=[
                    {
                        "ResourceType": "volume",
                        "Tags": tags(
                            {
                                "Name": "%s.etcd-%s.%s" % (member, key, args.cluster),
                                "KubernetesCluster": args.cluster,
                                "k8s.io/role/master": "1",
                                "k8s.io/role/control-plane": "1",
                                "kubernetes.io/cluster/%s" % args.cluster: "owned",
                                "k8s.io/etcd/%s" % key: "%s/%s" % (member, ",".join(members)),
                            }
                        ),
                    }
                ],
            )
            out["volumes"]["%s-%s" % (key, member)] = volume["VolumeId"]
        instance = ec2.run_instances(
            ImageId=image,
            InstanceType="t3.medium",
            MinCount=1,
            MaxCount=1,
            Placement={"AvailabilityZone": zone},
            TagSpecifications=[
                {
                    "ResourceType": "instance",
                    "Tags": tags(
                        {
                            "Name": "master-%s.masters.%s" % (zone, args.cluster),
                            "KubernetesCluster": args.cluster,
                            "k8s.io/role/master": "1",
                            "k8s.io/role/control-plane": "1",
                        }
                    ),
                }
            ],
        )
        out["instances"][member] = instance["Instances"][0]["InstanceId"]
    for i in range(args.unrelated):
        ec2.create_volume(
            AvailabilityZone=zones[0],
            Size=1,
            TagSpecifications=[{"ResourceType": "volume", "Tags": tags({"Name": "unrelated-%d" % i})}],
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
