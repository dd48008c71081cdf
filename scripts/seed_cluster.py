"""Seeds the local AWS emulator with a kOps-style HA cluster for the demo and the benchmark:
three masters' etcd volumes (members a, b, c in three zones, `main` and `events`, tagged as kOps
tags them) and one running master instance per zone. Prints a JSON object with the ids.

usage: seed_cluster.py ENDPOINT REGION CLUSTER [--unrelated N] [--hosted-zone NAME]
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
    parser.add_argument("--hosted-zone", help="a Route53 hosted zone to create, with kOps' placeholders")
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
    if args.hosted_zone:
        r53 = boto3.client(
            "route53",
            endpoint_url=args.endpoint,
            region_name=args.region,
            aws_access_key_id="demo",
            aws_secret_access_key="demo",
        )
        zone = r53.create_hosted_zone(Name=args.hosted_zone, CallerReference="seed")["HostedZone"]["Id"]
        placeholders = ["api." + args.cluster, "api.internal." + args.cluster]
        r53.change_resource_record_sets(
            HostedZoneId=zone,
            ChangeBatch={
                "Changes": [
                    {
                        "Action": "UPSERT",
                        "ResourceRecordSet": {
                            "Name": name,
                            "Type": "A",
                            "TTL": 60,
                            "ResourceRecords": [{"Value": "203.0.113.123"}],
                        },
                    }
                    for name in placeholders
                ]
            },
        )
        out["hosted_zone"] = zone.split("/")[-1]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
