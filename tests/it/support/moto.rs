//! The local AWS emulator: `moto` (from the virtualenv `scripts/test` sets up) started on a free
//! 127.0.0.1 port per test, with the request log of `scripts/moto_server.py`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use aws_config::{BehaviorVersion, Region};

/// A running emulator; killed when dropped.
pub(crate) struct Moto {
    child: Child,
    port: u16,
}

pub(crate) fn python() -> PathBuf {
    if let Some(server) = std::env::var_os("PROTOKUBE_MOTO_SERVER") {
        // .../.venv/bin/moto_server -> .../.venv/bin/python
        return Path::new(&server).with_file_name("python");
    }
    let venv = crate::support::repo().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "no moto virtualenv at {}: run the tests through scripts/test",
        venv.display()
    );
    venv
}

impl Moto {
    pub(crate) fn start() -> Self {
        let script = crate::support::repo().join("scripts/moto_server.py");
        let mut child = Command::new(python())
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting moto");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .expect("reading moto's port");
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("moto did not report its port: {line:?}"));
        Self { child, port }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn http(&self, method: &str, path: &str) -> String {
        self.http_with_body(method, path, "")
    }

    fn http_with_body(&self, method: &str, path: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default()
    }

    /// The AWS operations the emulator has served since the last reset, e.g. `DescribeVolumes`.
    pub(crate) fn operations(&self) -> Vec<String> {
        self.requests().iter().map(operation).collect()
    }

    /// How many `operation` requests were served since the last reset, retries included.
    pub(crate) fn count(&self, operation: &str) -> usize {
        self.operations().iter().filter(|o| *o == operation).count()
    }

    /// The layer's request log since the last reset (`GET /_protokube/requests`).
    fn requests(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(&self.http("GET", "/_protokube/requests")).unwrap()
    }

    /// Each operation served since the last reset, with the operations that were still
    /// unanswered when it arrived (issued concurrently with it).
    pub(crate) fn overlaps(&self) -> Vec<(String, Vec<String>)> {
        self.requests()
            .iter()
            .map(|r| {
                let overlapping = r["overlapping"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|o| o.as_str().unwrap_or_default().to_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                (operation(r), overlapping)
            })
            .collect()
    }

    /// How many Route53 record-set requests with this HTTP method were served
    /// (`GET`: ListResourceRecordSets, `POST`: ChangeResourceRecordSets).
    pub(crate) fn rrset_requests(&self, method: &str) -> usize {
        self.operations()
            .iter()
            .filter(|o| o.starts_with(method) && o.ends_with("/rrset"))
            .count()
    }

    /// Turns IAM enforcement on or off: moto's own for EC2 (`/moto-api/reset-auth`: it starts
    /// with the next request) and the layer's for what moto cannot judge (see
    /// `scripts/moto_server.py`). Seed first, then turn it on.
    pub(crate) fn enforce_iam(&self, on: bool) {
        let count = if on { "0" } else { "inf" };
        self.http_with_body("POST", "/moto-api/reset-auth", count);
        self.http_with_body(
            "POST",
            "/_protokube/iam",
            &serde_json::json!({ "enforce": on }).to_string(),
        );
    }

    /// The operations IAM refused since the last reset.
    pub(crate) fn denied(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r["denied"] == true)
            .map(operation)
            .collect()
    }

    /// Replaces the fault rules (see `scripts/moto_server.py`).
    pub(crate) fn set_faults(&self, rules: serde_json::Value) {
        self.http_with_body("POST", "/_protokube/faults", &rules.to_string());
    }

    /// Forgets the recorded requests.
    pub(crate) fn reset_operations(&self) {
        self.http("POST", "/_protokube/requests/reset");
    }

    /// An SDK configuration pointing at the emulator, for seeding.
    pub(crate) async fn sdk_config(&self, region: &str) -> aws_config::SdkConfig {
        aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .endpoint_url(self.endpoint())
            .credentials_provider(aws_sdk_ec2::config::Credentials::new(
                "testing", "testing", None, None, "test",
            ))
            .load()
            .await
    }

    pub(crate) async fn ec2(&self, region: &str) -> aws_sdk_ec2::Client {
        aws_sdk_ec2::Client::new(&self.sdk_config(region).await)
    }

    pub(crate) async fn route53(&self) -> aws_sdk_route53::Client {
        aws_sdk_route53::Client::new(&self.sdk_config("us-east-1").await)
    }
}

/// The operation of one entry of the request log.
fn operation(request: &serde_json::Value) -> String {
    request["operation"].as_str().unwrap_or_default().to_owned()
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
