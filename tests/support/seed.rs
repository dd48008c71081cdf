//! Seeding the emulator through the real SDK: tagged volumes, instances, attachments.

use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use aws_sdk_ec2::Client;

pub fn tags(pairs: &[(&str, &str)]) -> Vec<Tag> {
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
pub async fn volume(ec2: &Client, zone: &str, pairs: &[(&str, &str)]) -> String {
    let mut request = ec2
        .create_volume()
        .availability_zone(zone)
        .size(20)
        .volume_type(aws_sdk_ec2::types::VolumeType::Gp3);
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
pub async fn etcd_volume(ec2: &Client, cluster: &str, zone: &str, etcd: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = vec![
        ("KubernetesCluster".into(), cluster.into()),
        ("k8s.io/role/master".into(), "1".into()),
        (format!("kubernetes.io/cluster/{cluster}"), "owned".into()),
    ];
    for (key, value) in etcd {
        pairs.push((format!("k8s.io/etcd/{key}"), value.to_string()));
    }
    let borrowed: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    volume(ec2, zone, &borrowed).await
}

/// Starts an instance in `zone` with `tags`; returns its id.
pub async fn instance(ec2: &Client, zone: &str, pairs: &[(&str, &str)]) -> String {
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

pub async fn attach(ec2: &Client, volume_id: &str, instance_id: &str, device: &str) {
    ec2.attach_volume()
        .volume_id(volume_id)
        .instance_id(instance_id)
        .device(device)
        .send()
        .await
        .expect("AttachVolume");
}
