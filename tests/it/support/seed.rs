//! Seeding the emulator through the real SDK: tagged volumes, instances, attachments.

use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use aws_sdk_ec2::Client;

pub(crate) fn tags(pairs: &[(&str, &str)]) -> Vec<Tag> {
    pairs
        .iter()
        .map(|(k, v)| Tag::builder().key(*k).value(*v).build())
        .collect()
}

fn tag_spec(kind: ResourceType, pairs: &[(&str, &str)]) -> TagSpecification {
    TagSpecification::builder()
        .resource_type(kind)
        .set_tags(Some(tags(pairs)))
        .build()
}

/// Creates a 20 GiB gp3 volume in `zone` with `tags`; returns its id.
pub(crate) async fn volume(ec2: &Client, zone: &str, pairs: &[(&str, &str)]) -> String {
    volume_from(ec2, zone, pairs, None).await
}

/// [`volume`], created from `snapshot` when given.
pub(crate) async fn volume_from(
    ec2: &Client,
    zone: &str,
    pairs: &[(&str, &str)],
    snapshot: Option<&str>,
) -> String {
    let mut request = ec2
        .create_volume()
        .availability_zone(zone)
        .size(20)
        .volume_type(aws_sdk_ec2::types::VolumeType::Gp3)
        .set_snapshot_id(snapshot.map(str::to_owned));
    if !pairs.is_empty() {
        request = request.tag_specifications(tag_spec(ResourceType::Volume, pairs));
    }
    request
        .send()
        .await
        .expect("CreateVolume")
        .volume_id()
        .unwrap()
        .to_owned()
}

/// Creates an etcd volume as kOps does; `etcd` lists (cluster key, tag value) pairs.
pub(crate) async fn etcd_volume(
    ec2: &Client,
    cluster: &str,
    zone: &str,
    etcd: &[(&str, &str)],
) -> String {
    etcd_volume_with(ec2, cluster, zone, etcd, &[], None).await
}

/// [`etcd_volume`] with `extra` tags, created from `snapshot` when given.
pub(crate) async fn etcd_volume_with(
    ec2: &Client,
    cluster: &str,
    zone: &str,
    etcd: &[(&str, &str)],
    extra: &[(&str, &str)],
    snapshot: Option<&str>,
) -> String {
    let mut pairs: Vec<(String, String)> = vec![
        ("KubernetesCluster".into(), cluster.into()),
        ("k8s.io/role/master".into(), "1".into()),
        (format!("kubernetes.io/cluster/{cluster}"), "owned".into()),
    ];
    for (key, value) in etcd {
        pairs.push((format!("k8s.io/etcd/{key}"), value.to_string()));
    }
    for (key, value) in extra {
        pairs.push((key.to_string(), value.to_string()));
    }
    let borrowed: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    volume_from(ec2, zone, &borrowed, snapshot).await
}

/// A snapshot of a fresh volume in `zone`; returns its id.
pub(crate) async fn snapshot(ec2: &Client, zone: &str) -> String {
    let source = volume(ec2, zone, &[]).await;
    ec2.create_snapshot()
        .volume_id(source)
        .send()
        .await
        .expect("CreateSnapshot")
        .snapshot_id()
        .unwrap()
        .to_owned()
}

/// The tags of a volume.
pub(crate) async fn volume_tags(
    ec2: &Client,
    volume_id: &str,
) -> std::collections::BTreeMap<String, String> {
    let out = ec2
        .describe_volumes()
        .volume_ids(volume_id)
        .send()
        .await
        .expect("DescribeVolumes");
    out.volumes()[0]
        .tags()
        .iter()
        .map(|t| {
            (
                t.key().unwrap().to_owned(),
                t.value().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Starts an instance in `zone` with `tags`; returns its id.
pub(crate) async fn instance(ec2: &Client, zone: &str, pairs: &[(&str, &str)]) -> String {
    let images = ec2.describe_images().send().await.expect("DescribeImages");
    let image = images.images()[0].image_id().unwrap().to_owned();
    let mut request = ec2
        .run_instances()
        .image_id(image)
        .instance_type(aws_sdk_ec2::types::InstanceType::T3Medium)
        .min_count(1)
        .max_count(1)
        .placement(
            aws_sdk_ec2::types::Placement::builder()
                .availability_zone(zone)
                .build(),
        );
    if !pairs.is_empty() {
        request = request.tag_specifications(tag_spec(ResourceType::Instance, pairs));
    }
    let output = request.send().await.expect("RunInstances");
    output.instances()[0].instance_id().unwrap().to_owned()
}

pub(crate) async fn attach(ec2: &Client, volume_id: &str, instance_id: &str, device: &str) {
    ec2.attach_volume()
        .volume_id(volume_id)
        .instance_id(instance_id)
        .device(device)
        .send()
        .await
        .expect("AttachVolume");
}

/// Creates a public hosted zone; returns its id (without `/hostedzone/`).
pub(crate) async fn hosted_zone(route53: &aws_sdk_route53::Client, name: &str) -> String {
    let output = route53
        .create_hosted_zone()
        .name(name)
        .caller_reference(format!("test-{name}-{}", std::process::id()))
        .send()
        .await
        .expect("CreateHostedZone");
    output
        .hosted_zone()
        .unwrap()
        .id()
        .trim_start_matches("/hostedzone/")
        .to_owned()
}

/// Creates kOps' alias of an API load balancer at `name` (an A record aliasing an NLB's name).
pub(crate) async fn load_balancer_alias(
    route53: &aws_sdk_route53::Client,
    zone_id: &str,
    name: &str,
) {
    use aws_sdk_route53::types::{
        AliasTarget, Change, ChangeAction, ChangeBatch, ResourceRecordSet, RrType,
    };
    let alias = ResourceRecordSet::builder()
        .name(name)
        .r#type(RrType::A)
        .alias_target(
            AliasTarget::builder()
                .hosted_zone_id("Z26RNL4JYFTOTI")
                .dns_name("api-ha-example-com-0123456789.elb.us-east-1.amazonaws.com")
                .evaluate_target_health(false)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    route53
        .change_resource_record_sets()
        .hosted_zone_id(zone_id)
        .change_batch(
            ChangeBatch::builder()
                .changes(
                    Change::builder()
                        .action(ChangeAction::Create)
                        .resource_record_set(alias)
                        .build()
                        .unwrap(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("ChangeResourceRecordSets (alias)");
}

/// UPSERTs records: (name, type, values) with TTL 300, in batches of 500.
pub(crate) async fn records(
    route53: &aws_sdk_route53::Client,
    zone_id: &str,
    sets: &[(String, &str, Vec<String>)],
) {
    use aws_sdk_route53::types::{
        Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType,
    };
    for chunk in sets.chunks(500) {
        let mut batch = ChangeBatch::builder();
        for (name, kind, values) in chunk {
            let mut set = ResourceRecordSet::builder()
                .name(name)
                .r#type(RrType::from(*kind))
                .ttl(300);
            for value in values {
                set = set.resource_records(ResourceRecord::builder().value(value).build().unwrap());
            }
            batch = batch.changes(
                Change::builder()
                    .action(ChangeAction::Upsert)
                    .resource_record_set(set.build().unwrap())
                    .build()
                    .unwrap(),
            );
        }
        route53
            .change_resource_record_sets()
            .hosted_zone_id(zone_id)
            .change_batch(batch.build().unwrap())
            .send()
            .await
            .expect("ChangeResourceRecordSets");
    }
}

/// Every record set of the zone as (name without dot, type) -> (ttl, sorted values).
pub(crate) async fn zone_records(
    route53: &aws_sdk_route53::Client,
    zone_id: &str,
) -> std::collections::BTreeMap<(String, String), (Option<i64>, Vec<String>)> {
    let mut out = std::collections::BTreeMap::new();
    let mut start: Option<(String, aws_sdk_route53::types::RrType)> = None;
    loop {
        let mut request = route53.list_resource_record_sets().hosted_zone_id(zone_id);
        if let Some((name, kind)) = &start {
            request = request
                .start_record_name(name)
                .start_record_type(kind.clone());
        }
        let page = request.send().await.expect("ListResourceRecordSets");
        for set in page.resource_record_sets() {
            let mut values: Vec<String> = set
                .resource_records()
                .iter()
                .map(|r| r.value().to_owned())
                .collect();
            values.sort();
            out.insert(
                (
                    set.name().trim_end_matches('.').to_owned(),
                    set.r#type().as_str().to_owned(),
                ),
                (set.ttl(), values),
            );
        }
        match (
            page.is_truncated(),
            page.next_record_name(),
            page.next_record_type(),
        ) {
            (true, Some(name), Some(kind)) => start = Some((name.to_owned(), kind.clone())),
            _ => return out,
        }
    }
}

/// (private, public) addresses of an instance.
pub(crate) async fn instance_addresses(
    ec2: &Client,
    instance_id: &str,
) -> (String, Option<String>) {
    let out = ec2
        .describe_instances()
        .instance_ids(instance_id)
        .send()
        .await
        .expect("DescribeInstances");
    let instance = &out.reservations()[0].instances()[0];
    (
        instance.private_ip_address().unwrap().to_owned(),
        instance.public_ip_address().map(str::to_owned),
    )
}

/// A VPC with one subnet per (zone, CIDR); returns the subnet ids in order.
pub(crate) async fn vpc_with_subnets(
    ec2: &Client,
    cidr: &str,
    subnets: &[(&str, &str)],
) -> Vec<String> {
    let vpc = ec2
        .create_vpc()
        .cidr_block(cidr)
        .send()
        .await
        .expect("CreateVpc")
        .vpc()
        .unwrap()
        .vpc_id()
        .unwrap()
        .to_owned();
    let mut ids = Vec::new();
    for (zone, cidr) in subnets {
        let subnet = ec2
            .create_subnet()
            .vpc_id(&vpc)
            .cidr_block(*cidr)
            .availability_zone(*zone)
            .send()
            .await
            .expect("CreateSubnet");
        ids.push(subnet.subnet().unwrap().subnet_id().unwrap().to_owned());
    }
    ids
}

/// Starts an instance in `subnet` with a fixed private address; returns its id.
pub(crate) async fn instance_at(
    ec2: &Client,
    subnet: &str,
    private_ip: &str,
    pairs: &[(&str, &str)],
) -> String {
    instance_in(ec2, subnet, Some(private_ip), pairs).await
}

/// Starts an instance in `subnet`, with a fixed private address if given; returns its id.
pub(crate) async fn instance_in(
    ec2: &Client,
    subnet: &str,
    private_ip: Option<&str>,
    pairs: &[(&str, &str)],
) -> String {
    let images = ec2.describe_images().send().await.expect("DescribeImages");
    let image = images.images()[0].image_id().unwrap().to_owned();
    let output = ec2
        .run_instances()
        .image_id(image)
        .instance_type(aws_sdk_ec2::types::InstanceType::T3Medium)
        .min_count(1)
        .max_count(1)
        .subnet_id(subnet)
        .set_private_ip_address(private_ip.map(str::to_owned))
        .tag_specifications(tag_spec(ResourceType::Instance, pairs))
        .send()
        .await
        .expect("RunInstances");
    output.instances()[0].instance_id().unwrap().to_owned()
}

/// A VPC with an IPv6 block and two subnets: a dual-stack one (`10.0.1.0/24`,
/// `2001:db8:0:2::/64`) in `dual_zone`, an IPv6-only one (`2001:db8:0:1::/64`) in `v6_zone`.
/// Returns (dual-stack subnet, IPv6-only subnet).
pub(crate) async fn ipv6_subnets(ec2: &Client, dual_zone: &str, v6_zone: &str) -> (String, String) {
    let vpc = ec2
        .create_vpc()
        .cidr_block("10.0.0.0/16")
        .amazon_provided_ipv6_cidr_block(true)
        .send()
        .await
        .expect("CreateVpc");
    let vpc = vpc.vpc().unwrap().vpc_id().unwrap().to_owned();
    let dual = created_subnet(
        ec2.create_subnet()
            .vpc_id(&vpc)
            .cidr_block("10.0.1.0/24")
            .ipv6_cidr_block("2001:db8:0:2::/64")
            .availability_zone(dual_zone),
    )
    .await;
    let v6 = created_subnet(
        ec2.create_subnet()
            .vpc_id(&vpc)
            .ipv6_cidr_block("2001:db8:0:1::/64")
            .ipv6_native(true)
            .availability_zone(v6_zone),
    )
    .await;
    (dual, v6)
}

/// A VPC with one IPv6-only subnet per zone (`2001:db8:0:<n>::/64`, n from 1); their ids.
pub(crate) async fn ipv6_only_subnets(ec2: &Client, zones: &[&str]) -> Vec<String> {
    let vpc = ec2
        .create_vpc()
        .cidr_block("10.0.0.0/16")
        .amazon_provided_ipv6_cidr_block(true)
        .send()
        .await
        .expect("CreateVpc");
    let vpc = vpc.vpc().unwrap().vpc_id().unwrap().to_owned();
    let mut ids = Vec::new();
    for (n, zone) in zones.iter().enumerate() {
        let request = ec2
            .create_subnet()
            .vpc_id(&vpc)
            .ipv6_cidr_block(format!("2001:db8:0:{}::/64", n + 1))
            .ipv6_native(true)
            .availability_zone(*zone);
        ids.push(created_subnet(request).await);
    }
    ids
}

/// The id of the subnet `request` creates. moto counts 2^64-5 free addresses in an IPv6-only
/// subnet, more than the SDK's integer holds: the answer fails to decode, but the subnet
/// exists and its id is in the answer.
async fn created_subnet(
    request: aws_sdk_ec2::operation::create_subnet::builders::CreateSubnetFluentBuilder,
) -> String {
    match request.send().await {
        Ok(out) => out.subnet().unwrap().subnet_id().unwrap().to_owned(),
        Err(aws_sdk_ec2::error::SdkError::ServiceError(err)) => {
            let body = String::from_utf8_lossy(err.raw().body().bytes().unwrap());
            let start = body.find("<subnetId>").expect("CreateSubnet answer") + 10;
            let end = start + body[start..].find('<').unwrap();
            body[start..end].to_owned()
        }
        Err(err) => panic!("CreateSubnet: {err:?}"),
    }
}

/// Gives an instance's primary network interface the IPv6 address `address` (as EC2 does for
/// an instance in a dual-stack subnet; moto keeps only addresses assigned this way).
pub(crate) async fn assign_ipv6(ec2: &Client, instance_id: &str, address: &str) {
    let out = ec2
        .describe_instances()
        .instance_ids(instance_id)
        .send()
        .await
        .expect("DescribeInstances");
    let eni = out.reservations()[0].instances()[0].network_interfaces()[0]
        .network_interface_id()
        .unwrap()
        .to_owned();
    ec2.assign_ipv6_addresses()
        .network_interface_id(eni)
        .ipv6_addresses(address)
        .send()
        .await
        .expect("AssignIpv6Addresses");
}
