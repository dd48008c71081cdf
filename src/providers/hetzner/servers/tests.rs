//! Hetzner's servers against a local HTTP answer (mockito): the gossip name and cluster of this
//! server, the control plane's servers by label selector over every page, and what is refused.
//! The shapes are Hetzner Cloud's API reference's (`GET /servers/{id}`, `GET /servers`).

use std::time::Duration;

use mockito::{Matcher, Server as MockServer};
use serde_json::{json, Value};

use super::*;
use crate::error::UsageError;
use crate::providers::hetzner::{API, METADATA, PROVIDER};
use crate::providers::member_only::Clients;
use crate::providers::rest::{Calls, Rest};
use crate::wait::Deadline;

fn server(id: u64, name: &str, cluster: &str, role: &str, ip: Option<&str>) -> Value {
    json!({
        "id": id, "name": name, "status": "running",
        "labels": {CLUSTER_LABEL: cluster, ROLE_LABEL: role},
        "private_net": ip.map(|ip| vec![json!({"network": 4711, "ip": ip, "alias_ips": [], "mac_address": "86:00:00:2a:7d:e0"})]).unwrap_or_default(),
        "public_net": {"ipv4": {"id": 1, "ip": "203.0.113.9", "blocked": false, "dns_ptr": "x"}, "ipv6": null, "floating_ips": [], "firewalls": []},
        "location": {"id": 1, "name": "fsn1", "network_zone": "eu-central", "city": "Falkenstein", "country": "DE", "description": "x", "latitude": 0.0, "longitude": 0.0},
    })
}

fn page(servers: &[Value], next: Option<u64>) -> String {
    json!({"servers": servers, "meta": {"pagination": {"page": 1, "per_page": 50, "previous_page": null, "next_page": next, "last_page": 2, "total_entries": 51}}}).to_string()
}

fn servers_at(url: &str, token: bool) -> Servers {
    let deadline = Deadline::after(Duration::from_secs(10));
    let calls = Calls::default();
    let metadata = Rest::new(
        &METADATA,
        &format!("{url}/metadata/"),
        &[],
        deadline,
        calls.clone(),
        true,
    )
    .unwrap();
    let api = token.then(|| {
        Rest::new(
            &API,
            &format!("{url}/v1/"),
            &[("authorization", "Bearer t0ken".to_owned())],
            deadline,
            calls,
            false,
        )
        .unwrap()
    });
    Servers::new(Clients::from_parts(
        &PROVIDER,
        metadata,
        api,
        "HCLOUD_TOKEN",
    ))
}

#[tokio::test]
async fn this_server_is_its_name_and_id_and_its_cluster_label() {
    let mut mock = MockServer::new_async().await;
    let id = mock
        .mock("GET", "/metadata/instance-id")
        .with_body("42")
        .expect(1)
        .create_async()
        .await;
    let me = mock
        .mock("GET", "/v1/servers/42")
        .match_header("authorization", "Bearer t0ken")
        .with_body(
            json!({"server": server(42, "nodes-fsn1-1", "c.k8s.local", "Node", Some("10.0.0.7"))})
                .to_string(),
        )
        .expect(1)
        .create_async()
        .await;
    let servers = servers_at(&mock.url(), true);
    assert_eq!(
        servers
            .get(MetadataItem::InstanceId)
            .await
            .unwrap()
            .unwrap(),
        "nodes-fsn1-1-42"
    );
    assert_eq!(
        servers.get(MetadataItem::Zone).await.unwrap().unwrap(),
        "fsn1"
    );
    assert_eq!(
        servers
            .get(MetadataItem::InternalIpv4)
            .await
            .unwrap()
            .unwrap(),
        "10.0.0.7"
    );
    let found = servers.instance_tags("nodes-fsn1-1-42").await.unwrap();
    assert_eq!(found.get(tags::CLUSTER).unwrap(), "c.k8s.local");
    assert!(!found.contains_key(tags::CONTROL_PLANE_ROLE));
    id.assert_async().await;
    me.assert_async().await;
}

#[tokio::test]
async fn the_seeds_are_the_control_plane_of_the_cluster_over_every_page() {
    let mut mock = MockServer::new_async().await;
    let selector = "kops.k8s.io/cluster=c.k8s.local,kops.k8s.io/instance-role=ControlPlane";
    let first = mock
        .mock("GET", "/v1/servers")
        .match_query(Matcher::AllOf(vec![
            Matcher::UrlEncoded("label_selector".into(), selector.into()),
            Matcher::UrlEncoded("per_page".into(), "50".into()),
            Matcher::UrlEncoded("page".into(), "1".into()),
        ]))
        .with_body(page(
            &[
                server(
                    1,
                    "master-fsn1-1",
                    "c.k8s.local",
                    "ControlPlane",
                    Some("10.0.0.2"),
                ),
                // A server with no private network is no seed (kOps' rule).
                server(2, "master-fsn1-2", "c.k8s.local", "ControlPlane", None),
            ],
            Some(2),
        ))
        .create_async()
        .await;
    let second = mock
        .mock("GET", "/v1/servers")
        .match_query(Matcher::UrlEncoded("page".into(), "2".into()))
        .with_body(page(
            &[
                server(
                    3,
                    "master-fsn1-3",
                    "c.k8s.local",
                    "ControlPlane",
                    Some("10.0.0.4"),
                ),
                // One the selector should not have let through: never a seed.
                server(
                    4,
                    "master-other",
                    "c.k8s.local-2",
                    "ControlPlane",
                    Some("10.9.0.4"),
                ),
            ],
            None,
        ))
        .create_async()
        .await;
    let servers = servers_at(&mock.url(), true);
    let seeds = servers.running_masters("c.k8s.local").await.unwrap();
    let found: Vec<(String, Vec<IpAddr>)> =
        seeds.into_iter().map(|i| (i.id, i.private_ips)).collect();
    assert_eq!(
        found,
        [
            (
                "master-fsn1-1-1".to_owned(),
                vec!["10.0.0.2".parse().unwrap()]
            ),
            (
                "master-fsn1-3-3".to_owned(),
                vec!["10.0.0.4".parse().unwrap()]
            ),
        ]
    );
    first.assert_async().await;
    second.assert_async().await;
}

#[tokio::test]
async fn no_token_a_rejected_token_and_a_strange_name_are_each_said() {
    let mut mock = MockServer::new_async().await;
    mock.mock("GET", "/metadata/instance-id")
        .with_body("42")
        .create_async()
        .await;
    let err = servers_at(&mock.url(), false)
        .get(MetadataItem::InstanceId)
        .await
        .unwrap_err();
    assert!(err.is::<UsageError>(), "{err:#}");
    assert!(
        err.to_string().contains("`HCLOUD_TOKEN` is not set"),
        "{err:#}"
    );
    mock.mock("GET", "/v1/servers/42")
        .with_status(401)
        .with_body(json!({"error": {"code": "unauthorized", "message": "unable to authenticate", "details": {}}}).to_string())
        .create_async()
        .await;
    let err = servers_at(&mock.url(), true)
        .get(MetadataItem::InstanceId)
        .await
        .unwrap_err();
    let line = crate::error::one_line(&err);
    assert!(
        line.contains("rejected the token in `HCLOUD_TOKEN`")
            && line.contains("HTTP 401 unauthorized: unable to authenticate"),
        "{line}"
    );
    let mut mock = MockServer::new_async().await;
    mock.mock("GET", "/metadata/instance-id")
        .with_body("7")
        .create_async()
        .await;
    mock.mock("GET", "/v1/servers/7")
        .with_body(json!({"server": server(7, "evil\n10.0.0.1 api", "c.k8s.local", "Node", Some("10.0.0.7"))}).to_string())
        .create_async()
        .await;
    let err = servers_at(&mock.url(), true)
        .get(MetadataItem::InstanceId)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a host name"), "{err:#}");
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_until_its_reset() {
    let mut mock = MockServer::new_async().await;
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    // Answered 429 once, then the server.
    let limited = mock
        .mock("GET", "/v1/servers/9")
        .with_status(429)
        .with_header("ratelimit-reset", &reset.to_string())
        .with_body(
            json!({"error": {"code": "rate_limit_exceeded", "message": "limit"}}).to_string(),
        )
        .expect(1)
        .create_async()
        .await;
    let answered = mock
        .mock("GET", "/v1/servers/9")
        .with_body(json!({"server": server(9, "m", "c.k8s.local", "Node", None)}).to_string())
        .expect(1)
        .create_async()
        .await;
    let found = servers_at(&mock.url(), true).server(9).await.unwrap();
    assert_eq!(found.id, 9);
    limited.assert_async().await;
    answered.assert_async().await;
    // Not a burst: the second request waited for the reset second.
    let reset_at = std::time::UNIX_EPOCH + Duration::from_secs(reset);
    assert!(
        std::time::SystemTime::now() >= reset_at,
        "asked again before the reset"
    );
}
