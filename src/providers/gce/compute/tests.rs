//! Compute Engine's client against a local HTTP answer (mockito, as afterburn's `mock_tests`):
//! the requests it sends, the pages and operations it follows, the retries it makes and the
//! answers it refuses. Google's own shapes, from the Compute Engine v1 reference.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use mockito::{Matcher, Mock, Server, ServerGuard};
use serde_json::json;

use super::*;
use crate::cloud::AccessDenied;
use crate::providers::gce::api::GceEndpoints;
use crate::providers::gce::metadata::MetadataServer;
use crate::wait::Deadline;

const PROJECT: &str = "p";
const ZONE: &str = "us-test1-a";
const CLUSTER: &str = "k.example.com";
/// kOps' cluster label value for [`CLUSTER`].
const LABEL: &str = "k-example-com";
const TOKEN: &str = "ya29.local";

/// A local Google: the metadata server's token and Compute Engine, on one server.
struct Google {
    server: ServerGuard,
    compute: Compute,
    token: Mock,
}

impl Google {
    /// A local Google whose metadata server is asked for a token once.
    async fn new() -> Self {
        Self::with_token_fetches(1).await
    }

    /// A local Google whose metadata server is asked for a token `fetches` times.
    async fn with_token_fetches(fetches: usize) -> Self {
        let mut server = Server::new_async().await;
        let token = server
            .mock(
                "GET",
                "/computeMetadata/v1/instance/service-accounts/default/token",
            )
            .match_header("metadata-flavor", "Google")
            .with_header("metadata-flavor", "Google")
            .with_body(
                json!({"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"})
                    .to_string(),
            )
            .expect(fetches)
            .create_async()
            .await;
        let url = server.url();
        let metadata =
            MetadataServer::at(&format!("{url}/computeMetadata/v1/")).expect("a metadata client");
        let api = GoogleApi::new(
            GceEndpoints {
                compute: format!("{url}/compute/v1/"),
                dns: format!("{url}/dns/v1/"),
            },
            Arc::new(metadata),
            Deadline::after(Duration::from_secs(20)),
        )
        .expect("a Google client");
        let placement = Placement {
            region: "us-test1".to_owned(),
            zone: ZONE.to_owned(),
        };
        Self {
            compute: Compute::new(api, PROJECT.to_owned(), placement),
            server,
            token,
        }
    }

    /// Compute Engine's answer to `method` on `path` (under `projects/<project>/`), asked with
    /// the token, answering `body` once.
    fn answer(&mut self, method: &str, path: &str, body: &serde_json::Value) -> mockito::Mock {
        self.server
            .mock(
                method,
                format!("/compute/v1/projects/{PROJECT}/{path}").as_str(),
            )
            .match_query(Matcher::Any)
            .match_header("authorization", format!("Bearer {TOKEN}").as_str())
            .with_header("content-type", "application/json")
            .with_body(body.to_string())
            .expect(1)
    }

    /// The metadata server's `path` (`instance/name`).
    async fn metadata(&mut self, path: &str, value: &str) {
        self.server
            .mock("GET", format!("/computeMetadata/v1/{path}").as_str())
            .with_header("metadata-flavor", "Google")
            .with_body(value)
            .create_async()
            .await;
    }
}

fn disk(name: &str, users: &[&str]) -> serde_json::Value {
    json!({
        "kind": "compute#disk",
        "name": name,
        "zone": format!("https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}"),
        "status": "READY",
        "users": users.iter().map(|u| format!(
            "https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/instances/{u}"
        )).collect::<Vec<_>>(),
        "labels": {"k8s-io-cluster-name": LABEL, "k8s-io-etcd-main": "a-2fa", "k8s-io-role-master": "master"},
        "labelFingerprint": "f1",
    })
}

fn instance(name: &str, zone: &str, status: &str, labels: &serde_json::Value) -> serde_json::Value {
    json!({
        "kind": "compute#instance",
        "name": name,
        "zone": format!("https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{zone}"),
        "status": status,
        "labels": labels,
        "networkInterfaces": [{"networkIP": "10.0.0.7", "accessConfigs": [{"natIP": "203.0.113.7"}]}],
        "disks": [],
    })
}

/// The cluster's disks in the node's zone.
fn zone_query() -> VolumeQuery {
    VolumeQuery {
        cluster: CLUSTER.to_owned(),
        zone: Some(ZONE.to_owned()),
    }
}

/// A request matcher that matches every request and records its path and query, and the record.
fn recorder() -> (
    Arc<StdMutex<Vec<String>>>,
    impl Fn(&mockito::Request) -> bool,
) {
    let seen = Arc::new(StdMutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let matcher = move |request: &mockito::Request| {
        kept.lock()
            .expect("the record")
            .push(request.path_and_query().to_owned());
        true
    };
    (seen, matcher)
}

/// The value of `key` in a request's query.
fn query_value(path_and_query: &str, key: &str) -> Option<String> {
    path_and_query
        .split_once('?')?
        .1
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{key}=")).map(str::to_owned))
}

#[tokio::test]
async fn a_zones_disks_are_listed_by_the_cluster_label_page_after_page() {
    let mut google = Google::new().await;
    let filter = Matcher::UrlEncoded(
        "filter".into(),
        format!("labels.k8s-io-cluster-name=\"{LABEL}\""),
    );
    let first = google
        .answer(
            "GET",
            &format!("zones/{ZONE}/disks"),
            &json!({"items": [disk("a", &[])], "nextPageToken": "t2"}),
        )
        .match_query(Matcher::AllOf(vec![
            filter.clone(),
            Matcher::UrlEncoded("maxResults".into(), "500".into()),
        ]))
        .match_request(|r| !r.path_and_query().contains("pageToken"))
        .create_async()
        .await;
    let second = google
        .answer(
            "GET",
            &format!("zones/{ZONE}/disks"),
            &json!({"items": [disk("b", &["m1"])]}),
        )
        .match_query(Matcher::AllOf(vec![
            filter,
            Matcher::UrlEncoded("pageToken".into(), "t2".into()),
        ]))
        .create_async()
        .await;
    let holder = google
        .answer(
            "GET",
            &format!("zones/{ZONE}/instances/m1"),
            &json!({"name": "m1", "disks": [{
                "deviceName": "etcd-b", "mode": "READ_ONLY", "boot": false,
                "source": format!("https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/disks/b"),
            }]}),
        )
        .create_async()
        .await;
    let volumes = google
        .compute
        .find_volumes(&zone_query())
        .await
        .expect("the disks");
    for mock in [&first, &second, &holder] {
        mock.assert_async().await;
    }
    let ids: Vec<&str> = volumes.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(volumes[0].state, VolumeState::Available);
    assert_eq!(volumes[1].state, VolumeState::InUse);
    let held = &volumes[1].attachments[0];
    assert_eq!(
        (
            held.instance_id.as_str(),
            held.device.as_str(),
            held.read_only
        ),
        ("m1", "etcd-b", true)
    );
    assert_eq!(volumes[0].tags[tags::CLUSTER], CLUSTER);
    assert_eq!(volumes[0].tags["k8s.io/etcd/main"], "a/a");
    assert_eq!(google.compute.api.calls()["compute.disks.list"], 2);
    google.token.assert_async().await;
}

#[tokio::test]
async fn a_disk_answer_without_its_status_is_an_error_naming_the_field() {
    let mut google = Google::new().await;
    let mut answer = disk("a", &[]);
    answer.as_object_mut().expect("an object").remove("status");
    google
        .answer("GET", &format!("zones/{ZONE}/disks/a"), &answer)
        .create_async()
        .await;
    let err = google
        .compute
        .volumes_by_id(&["a".to_owned()])
        .await
        .expect_err("no status");
    assert_eq!(
        format!("{err:#}"),
        "the `compute.disks` answer has no `status`"
    );
}

/// The node `m1`, labelled for the cluster and named so in its metadata.
async fn node(google: &mut Google) -> Mock {
    let mut answer = instance(
        "m1",
        ZONE,
        "RUNNING",
        &json!({"k8s-io-cluster-name": LABEL}),
    );
    answer["metadata"] = json!({"items": [{"key": "cluster-name", "value": CLUSTER}]});
    google
        .answer("GET", &format!("zones/{ZONE}/instances/m1"), &answer)
        .create_async()
        .await
}

#[tokio::test]
async fn an_attach_waits_for_its_operation_and_takes_a_lost_race_as_the_disk_taken() {
    let mut google = Google::new().await;
    node(&mut google).await;
    google
        .answer("GET", &format!("zones/{ZONE}/disks/d"), &disk("d", &[]))
        .create_async()
        .await;
    let attach = google
        .answer(
            "POST",
            &format!("zones/{ZONE}/instances/m1/attachDisk"),
            &json!({"name": "op-1", "status": "RUNNING"}),
        )
        .match_query(Matcher::Regex("requestId=[0-9a-f-]{36}".into()))
        .match_body(Matcher::PartialJson(json!({
            "source": format!("projects/{PROJECT}/zones/{ZONE}/disks/d"),
            "deviceName": "d",
            "mode": "READ_WRITE",
        })))
        .create_async()
        .await;
    let wait = format!("zones/{ZONE}/operations/op-1/wait");
    let running = google
        .answer("POST", &wait, &json!({"name": "op-1", "status": "RUNNING"}))
        .create_async()
        .await;
    let done = google
        .answer(
            "POST",
            &wait,
            &json!({"name": "op-1", "status": "DONE", "error": {"errors": [{
                "code": "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE",
                "message": "The disk resource 'd' is already being used by 'm2'",
            }]}}),
        )
        .create_async()
        .await;
    let outcome = google
        .compute
        .attach_volume("d", "m1", "d", false)
        .await
        .expect("an outcome");
    for mock in [&attach, &running, &done] {
        mock.assert_async().await;
    }
    assert_eq!(
        outcome,
        AttachOutcome::VolumeTaken("The disk resource 'd' is already being used by 'm2'".into())
    );
}

#[tokio::test]
async fn a_busy_attach_is_sent_again_with_the_same_request_id() {
    let mut google = Google::new().await;
    node(&mut google).await;
    google
        .answer("GET", &format!("zones/{ZONE}/disks/d"), &disk("d", &[]))
        .create_async()
        .await;
    let path = format!("zones/{ZONE}/instances/m1/attachDisk");
    let (seen, record) = recorder();
    let busy = google
        .answer(
            "POST",
            &path,
            &json!({"error": {"code": 503, "message": "Backend Error"}}),
        )
        .with_status(503)
        .match_request(record)
        .create_async()
        .await;
    let (seen_again, record_again) = recorder();
    let accepted = google
        .answer("POST", &path, &json!({"name": "op-1", "status": "DONE"}))
        .match_request(record_again)
        .create_async()
        .await;
    let outcome = google
        .compute
        .attach_volume("d", "m1", "d", false)
        .await
        .expect("an outcome");
    busy.assert_async().await;
    accepted.assert_async().await;
    assert_eq!(outcome, AttachOutcome::Requested);
    let first = query_value(&seen.lock().expect("seen")[0], "requestId");
    let last = seen_again.lock().expect("seen").last().cloned();
    assert!(first.is_some());
    assert_eq!(first, query_value(&last.expect("sent again"), "requestId"));
}

#[tokio::test]
async fn a_disk_of_another_cluster_is_never_asked_to_attach() {
    let mut google = Google::new().await;
    node(&mut google).await;
    let mut foreign = disk("d", &[]);
    foreign["labels"]["k8s-io-cluster-name"] = json!("other-example-com");
    google
        .answer("GET", &format!("zones/{ZONE}/disks/d"), &foreign)
        .create_async()
        .await;
    let attach = google
        .answer(
            "POST",
            &format!("zones/{ZONE}/instances/m1/attachDisk"),
            &json!({}),
        )
        .expect(0)
        .create_async()
        .await;
    let err = google
        .compute
        .attach_volume("d", "m1", "d", false)
        .await
        .expect_err("refused");
    attach.assert_async().await;
    assert!(
        format!("{err:#}").contains("`k8s-io-cluster-name=other-example-com`"),
        "{err:#}"
    );
}

#[tokio::test]
async fn a_label_change_raced_by_another_writer_is_read_and_sent_again() {
    let mut google = Google::new().await;
    let get = format!("zones/{ZONE}/disks/d");
    google
        .answer("GET", &get, &disk("d", &[]))
        .create_async()
        .await;
    let mut changed = disk("d", &[]);
    changed["labelFingerprint"] = json!("f2");
    changed["labels"]["team"] = json!("etcd");
    google.answer("GET", &get, &changed).create_async().await;
    let set = format!("zones/{ZONE}/disks/d/setLabels");
    let raced = google
        .answer(
            "POST",
            &set,
            &json!({"error": {"code": 412, "message": "Labels fingerprint either invalid or resource labels have changed", "errors": [{"reason": "conditionNotMet"}]}}),
        )
        .with_status(412)
        .match_body(Matcher::PartialJson(json!({"labelFingerprint": "f1"})))
        .create_async()
        .await;
    let kept = google
        .answer("POST", &set, &json!({"name": "op-2", "status": "DONE"}))
        .match_body(Matcher::PartialJson(json!({
            "labelFingerprint": "f2",
            "labels": {"team": "etcd", "k8s-io-cluster-name": LABEL, "k8s-io-protokube-formatted": "u-1"},
        })))
        .create_async()
        .await;
    google
        .compute
        .tag_volume("d", crate::plan::blank::FORMATTED_TAG, "u-1")
        .await
        .expect("labelled");
    raced.assert_async().await;
    kept.assert_async().await;
}

#[tokio::test]
async fn a_token_google_rejects_is_fetched_again_once() {
    let mut google = Google::with_token_fetches(2).await;
    let path = format!("zones/{ZONE}/disks/a");
    let rejected = google
        .answer(
            "GET",
            &path,
            &json!({"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}),
        )
        .with_status(401)
        .create_async()
        .await;
    let answered = google
        .answer("GET", &path, &disk("a", &[]))
        .create_async()
        .await;
    let volumes = google
        .compute
        .volumes_by_id(&["a".to_owned()])
        .await
        .expect("answered with a new token");
    rejected.assert_async().await;
    answered.assert_async().await;
    assert_eq!(volumes.len(), 1);
    google.token.assert_async().await;
}

#[tokio::test]
async fn a_refusal_names_the_permission_google_checked() {
    let mut google = Google::new().await;
    google
        .answer(
            "GET",
            &format!("zones/{ZONE}/disks"),
            &json!({"error": {"code": 403, "message": "Required 'compute.disks.list' permission for 'projects/p'", "errors": [{"reason": "forbidden"}]}}),
        )
        .with_status(403)
        .create_async()
        .await;
    let err = google
        .compute
        .find_volumes(&zone_query())
        .await
        .expect_err("refused");
    let denied = err.downcast_ref::<AccessDenied>().expect("access denied");
    assert_eq!(denied.permission, "compute.disks.list");
}

#[tokio::test]
async fn the_masters_come_from_one_listing_of_the_regions_instances() {
    let mut google = Google::new().await;
    google.metadata("instance/name", "w1").await;
    let master = json!({"k8s-io-cluster-name": LABEL, "k8s-io-role-control-plane": ""});
    let worker = json!({"k8s-io-cluster-name": LABEL, "k8s-io-role-node": ""});
    // kOps ≤ 1.22: no labels, the cluster in the metadata and the role in a network tag.
    let mut old_master = instance("m2", "us-test1-b", "STOPPING", &json!({}));
    old_master["metadata"] = json!({"items": [{"key": "cluster-name", "value": CLUSTER}]});
    old_master["tags"] = json!({"items": [format!("{LABEL}-k8s-io-role-master")]});
    let listing = google
        .answer(
            "GET",
            "aggregated/instances",
            &json!({"items": {
                "zones/us-test1-a": {"instances": [
                    instance("m1", ZONE, "RUNNING", &master),
                    instance("w1", ZONE, "RUNNING", &worker),
                ]},
                "zones/us-test1-b": {"instances": [old_master]},
                "zones/us-test2-a": {"instances": [instance("m3", "us-test2-a", "RUNNING", &master)]},
                "zones/us-test1-c": {"warning": {"code": "NO_RESULTS_ON_PAGE"}},
            }}),
        )
        .create_async()
        .await;
    let running = google
        .compute
        .running_masters(CLUSTER)
        .await
        .expect("running masters");
    let seeds = google
        .compute
        .seed_masters(CLUSTER)
        .await
        .expect("seed masters");
    listing.assert_async().await;
    let ids = |list: &[InstanceInfo]| list.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&running), ["m1"]);
    assert_eq!(ids(&seeds), ["m1", "m2"]);
    assert_eq!(
        running[0].private_ips,
        ["10.0.0.7".parse::<IpAddr>().expect("ip")]
    );
    assert_eq!(
        running[0].public_ips,
        ["203.0.113.7".parse::<IpAddr>().expect("ip")]
    );
}
