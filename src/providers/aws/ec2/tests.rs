//! EC2's client against a local HTTP answer (mockito, as afterburn's `mock_tests`): the
//! filters and pages it asks for, the clock it reads attachments on, and the error codes it
//! tells apart. The answers are EC2's query-protocol XML (API version 2016-11-15).

use std::time::{Duration, SystemTime};

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region};
use mockito::{Matcher, Server, ServerGuard};

use super::*;
use crate::cloud::AccessDenied;

const CLUSTER: &str = "k.example.com";

/// A local EC2 and the client protokube makes on it.
async fn ec2() -> (ServerGuard, Ec2, CallCounter) {
    let server = Server::new_async().await;
    let config = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(server.url())
        .credentials_provider(aws_sdk_ec2::config::Credentials::new(
            "AKIDLOCAL",
            "secret",
            None,
            None,
            "test",
        ))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(2)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .load()
        .await;
    let counter = CallCounter::default();
    let client = Ec2::new(&config, &counter);
    (server, client, counter)
}

/// EC2's answer `body` to action `action` (a form field of the request).
fn answer(server: &mut ServerGuard, action: &str, body: &str) -> mockito::Mock {
    server
        .mock("POST", "/")
        .match_body(Matcher::UrlEncoded("Action".into(), action.into()))
        .with_header("content-type", "text/xml;charset=UTF-8")
        .with_body(format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<{action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
<requestId>7a62c49f-347e-4fc4-9331-6e8eEXAMPLE</requestId>{body}</{action}Response>"#
        ))
        .expect(1)
}

/// EC2's error answer: HTTP `status`, `code` and `message`.
fn refusal(
    server: &mut ServerGuard,
    action: &str,
    status: usize,
    code: &str,
    message: &str,
) -> mockito::Mock {
    server
        .mock("POST", "/")
        .match_body(Matcher::UrlEncoded("Action".into(), action.into()))
        .with_status(status)
        .with_header("content-type", "text/xml;charset=UTF-8")
        .with_body(format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{code}\
             </Code><Message>{message}</Message></Error></Errors>\
             <RequestID>ea966190-f9aa-478e-9ede-example</RequestID></Response>"
        ))
        .expect(1)
}

fn volume_xml(id: &str, attachment: &str) -> String {
    format!(
        "<item><volumeId>{id}</volumeId><size>20</size><availabilityZone>us-east-1a\
         </availabilityZone><status>{}</status><createTime>2026-11-01T00:00:00.000Z</createTime>\
         <volumeType>gp3</volumeType><encrypted>true</encrypted>\
         <attachmentSet>{attachment}</attachmentSet><tagSet>\
         <item><key>KubernetesCluster</key><value>{CLUSTER}</value></item>\
         <item><key>k8s.io/role/master</key><value>1</value></item>\
         <item><key>k8s.io/etcd/main</key><value>a/a</value></item></tagSet></item>",
        if attachment.is_empty() {
            "available"
        } else {
            "in-use"
        }
    )
}

#[tokio::test]
async fn the_clusters_volumes_are_asked_for_by_tag_page_after_page() {
    let (mut server, ec2, counter) = ec2().await;
    let filters = Matcher::AllOf(vec![
        Matcher::UrlEncoded("Filter.1.Name".into(), "tag:KubernetesCluster".into()),
        Matcher::UrlEncoded("Filter.1.Value.1".into(), CLUSTER.into()),
        Matcher::UrlEncoded("Filter.2.Name".into(), "tag-key".into()),
        Matcher::UrlEncoded("Filter.2.Value.1".into(), "k8s.io/role/master".into()),
        Matcher::UrlEncoded("Filter.3.Name".into(), "availability-zone".into()),
        Matcher::UrlEncoded("Filter.3.Value.1".into(), "us-east-1a".into()),
        Matcher::UrlEncoded("MaxResults".into(), "500".into()),
    ]);
    let first = answer(
        &mut server,
        "DescribeVolumes",
        &format!(
            "<volumeSet>{}</volumeSet><nextToken>t2</nextToken>",
            volume_xml("vol-1", "")
        ),
    )
    .match_body(Matcher::AllOf(vec![
        filters.clone(),
        Matcher::UrlEncoded("Action".into(), "DescribeVolumes".into()),
    ]))
    .match_request(|r| !r.utf8_lossy_body().is_ok_and(|b| b.contains("NextToken")))
    .create_async()
    .await;
    let attached = "<item><volumeId>vol-2</volumeId><instanceId>i-1</instanceId>\
                    <device>/dev/xvdu</device><status>attached</status>\
                    <attachTime>2026-11-01T00:01:00.000Z</attachTime>\
                    <deleteOnTermination>false</deleteOnTermination></item>";
    let second = answer(
        &mut server,
        "DescribeVolumes",
        &format!("<volumeSet>{}</volumeSet>", volume_xml("vol-2", attached)),
    )
    .match_body(Matcher::AllOf(vec![
        filters,
        Matcher::UrlEncoded("NextToken".into(), "t2".into()),
    ]))
    .create_async()
    .await;
    let query = VolumeQuery {
        cluster: CLUSTER.to_owned(),
        zone: Some("us-east-1a".to_owned()),
    };
    let volumes = ec2.find_volumes(&query).await.expect("the volumes");
    first.assert_async().await;
    second.assert_async().await;
    assert_eq!(counter.counts()["DescribeVolumes"], 2);
    let ids: Vec<&str> = volumes.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ids, ["vol-1", "vol-2"]);
    assert_eq!(volumes[0].state, VolumeState::Available);
    let held = &volumes[1].attachments[0];
    assert_eq!(
        (held.instance_id.as_str(), held.device.as_str(), held.state),
        ("i-1", "/dev/xvdu", AttachmentState::Attached)
    );
    assert_eq!(volumes[1].tags["k8s.io/etcd/main"], "a/a");
}

#[tokio::test]
async fn an_attaching_attachment_is_dated_on_the_nodes_clock() {
    let (mut server, ec2, _) = ec2().await;
    // EC2's clock runs an hour ahead of the node's; the attachment began 10 s before the answer.
    let ec2_now = SystemTime::now() + Duration::from_hours(1);
    let begun = DateTime::from(ec2_now - Duration::from_secs(10));
    let attaching = format!(
        "<item><volumeId>vol-1</volumeId><instanceId>i-1</instanceId><device>/dev/xvdu</device>\
         <status>attaching</status><attachTime>{}</attachTime>\
         <deleteOnTermination>false</deleteOnTermination></item>",
        begun.fmt(DateTimeFormat::DateTime).expect("a date")
    );
    answer(
        &mut server,
        "DescribeVolumes",
        &format!("<volumeSet>{}</volumeSet>", volume_xml("vol-1", &attaching)),
    )
    .with_header(
        "date",
        &DateTime::from(ec2_now)
            .fmt(DateTimeFormat::HttpDate)
            .expect("a date"),
    )
    .create_async()
    .await;
    let volumes = ec2
        .volumes_by_id(&["vol-1".to_owned()])
        .await
        .expect("the volume");
    let since = SystemTime::now()
        .duration_since(volumes[0].attachments[0].attach_time.expect("a time"))
        .expect("in the past");
    // Ten seconds ago on the node's clock, whatever EC2's says (`Date` has whole seconds).
    assert!((9..=12).contains(&since.as_secs()), "{since:?}");
}

#[tokio::test]
async fn attach_errors_are_told_apart_by_their_codes() {
    let (mut server, ec2, _) = ec2().await;
    let cases = [
        (412, "DryRunOperation", "Request would have succeeded, but DryRun flag is set."),
        (400, "VolumeInUse", "vol-1 is already attached to an instance"),
        (400, "InvalidParameterValue", "Invalid value '/dev/xvdu' for unixDevice. Attachment point /dev/xvdu is already in use"),
        (403, "UnauthorizedOperation", "You are not authorized to perform this operation."),
    ];
    for (status, code, message) in cases {
        refusal(&mut server, "AttachVolume", status, code, message)
            .create_async()
            .await;
    }
    let mut outcomes = Vec::new();
    for _ in &cases {
        outcomes.push(ec2.attach_volume("vol-1", "i-1", "/dev/xvdu", true).await);
    }
    let mut outcomes = outcomes.into_iter();
    assert_eq!(
        outcomes.next().and_then(Result::ok),
        Some(AttachOutcome::WouldSucceed)
    );
    assert!(
        matches!(outcomes.next(), Some(Ok(AttachOutcome::VolumeTaken(said))) if said.starts_with("VolumeInUse"))
    );
    assert!(matches!(
        outcomes.next(),
        Some(Ok(AttachOutcome::DeviceNameTaken(_)))
    ));
    let err = outcomes.next().expect("a fourth").expect_err("refused");
    let denied = err.downcast_ref::<AccessDenied>().expect("access denied");
    assert_eq!(denied.permission, "ec2:AttachVolume");
}

#[tokio::test]
async fn a_volume_answer_without_its_zone_is_an_error_naming_the_field() {
    let (mut server, ec2, _) = ec2().await;
    let volume =
        volume_xml("vol-1", "").replace("<availabilityZone>us-east-1a</availabilityZone>", "");
    answer(
        &mut server,
        "DescribeVolumes",
        &format!("<volumeSet>{volume}</volumeSet>"),
    )
    .create_async()
    .await;
    let err = ec2
        .volumes_by_id(&["vol-1".to_owned()])
        .await
        .expect_err("no zone");
    assert!(
        format!("{err:#}")
            .ends_with("the ec2:DescribeVolumes (volume `vol-1`) answer has no `AvailabilityZone`"),
        "{err:#}"
    );
}

#[tokio::test]
async fn the_masters_are_asked_for_by_role_tag_and_state() {
    let (mut server, ec2, _) = ec2().await;
    let listing = answer(
        &mut server,
        "DescribeInstances",
        "<reservationSet><item><reservationId>r-1</reservationId><instancesSet>\
         <item><instanceId>i-2</instanceId><privateIpAddress>10.0.0.2</privateIpAddress>\
         <ipAddress>203.0.113.2</ipAddress><blockDeviceMapping>\
         <item><deviceName>/dev/xvdu</deviceName><ebs><volumeId>vol-1</volumeId>\
         <status>attached</status></ebs></item></blockDeviceMapping></item>\
         <item><instanceId>i-1</instanceId><privateIpAddress>10.0.0.1</privateIpAddress></item>\
         </instancesSet></item></reservationSet>",
    )
    .match_body(Matcher::AllOf(vec![
        Matcher::UrlEncoded("Filter.1.Name".into(), "tag:KubernetesCluster".into()),
        Matcher::UrlEncoded("Filter.1.Value.1".into(), CLUSTER.into()),
        Matcher::UrlEncoded("Filter.2.Value.1".into(), "k8s.io/role/master".into()),
        Matcher::UrlEncoded(
            "Filter.2.Value.2".into(),
            "k8s.io/role/control-plane".into(),
        ),
        Matcher::UrlEncoded("Filter.3.Name".into(), "instance-state-name".into()),
        Matcher::UrlEncoded("Filter.3.Value.1".into(), "running".into()),
        Matcher::UrlEncoded("Filter.3.Value.2".into(), "pending".into()),
    ]))
    .create_async()
    .await;
    let seeds = ec2.seed_masters(CLUSTER).await.expect("the masters");
    listing.assert_async().await;
    let ids: Vec<&str> = seeds.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["i-1", "i-2"]);
    assert_eq!(
        seeds[1].public_ips,
        ["203.0.113.2".parse::<IpAddr>().expect("ip")]
    );
    assert_eq!(seeds[1].volumes[0].volume_id, "vol-1");
}
