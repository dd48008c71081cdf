//! An in-test IMDSv2 server: `PUT /latest/api/token` first (with the TTL header the SDK checks),
//! then `GET /latest/meta-data/...` with the token; anything else is refused as EC2 would.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TOKEN: &str = "in-test-imds-token";

pub(crate) struct ImdsServer {
    address: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    /// Until then, a connection is closed without an answer (a service still starting).
    down_until: Arc<Mutex<Option<Instant>>>,
    /// When set, token requests are answered with this HTTP status (a failing service).
    token_status: Arc<Mutex<Option<u16>>>,
    requests: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl ImdsServer {
    /// Serves `items`: paths under `/latest/meta-data/` → values; other paths answer 404.
    pub(crate) fn start(items: &[(&str, &str)]) -> Self {
        Self::serve_on(TcpListener::bind("127.0.0.1:0").unwrap(), items)
    }

    /// Serves `items` on `listener` (which may belong to another network namespace).
    pub(crate) fn serve_on(listener: TcpListener, items: &[(&str, &str)]) -> Self {
        let items: BTreeMap<String, String> = items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let address = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let down_until = Arc::new(Mutex::new(None::<Instant>));
        let token_status = Arc::new(Mutex::new(None::<u16>));
        let thread = {
            let stop = stop.clone();
            let requests = requests.clone();
            let down_until = down_until.clone();
            let token_status = token_status.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let down = down_until
                                .lock()
                                .unwrap()
                                .is_some_and(|t| Instant::now() < t);
                            if down {
                                drop(stream);
                                continue;
                            }
                            let _ = stream.set_nonblocking(false);
                            let failing = *token_status.lock().unwrap();
                            let _ = serve(stream, &items, &requests, failing);
                        }
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                    }
                }
            })
        };
        Self {
            address,
            stop,
            down_until,
            token_status,
            requests,
            thread: Some(thread),
        }
    }

    /// From now on, token requests are answered with HTTP `status` and no token (a metadata
    /// service failing).
    pub(crate) fn fail_tokens_with(&self, status: u16) {
        *self.token_status.lock().unwrap() = Some(status);
    }

    /// From now on for `period`, connections are closed without an answer: a metadata service
    /// not up yet at boot.
    pub(crate) fn unavailable_for(&self, period: Duration) {
        *self.down_until.lock().unwrap() = Some(Instant::now() + period);
    }

    /// A metadata service for an instance.
    pub(crate) fn for_instance(
        instance_id: &str,
        zone: &str,
        region: &str,
        private_ip: &str,
    ) -> Self {
        Self::start(&[
            ("instance-id", instance_id),
            ("placement/availability-zone", zone),
            ("placement/region", region),
            ("local-ipv4", private_ip),
        ])
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}/", self.address)
    }

    /// `METHOD path` of every request served so far.
    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for ImdsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    stream: TcpStream,
    items: &BTreeMap<String, String>,
    requests: &Mutex<Vec<String>>,
    failing_tokens: Option<u16>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    if let Some(length) = headers
        .get("content-length")
        .and_then(|l| l.parse::<usize>().ok())
    {
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    requests.lock().unwrap().push(format!("{method} {path}"));
    let failed = failing_tokens.map(|code| format!("{code} Failing"));
    let (status, extra, body) =
        if let (Some(failed), true) = (&failed, method == "PUT" && path == "/latest/api/token") {
            (failed.as_str(), String::new(), "internal error".to_owned())
        } else if method == "PUT" && path == "/latest/api/token" {
            match headers.get("x-aws-ec2-metadata-token-ttl-seconds") {
                Some(ttl) => (
                    "200 OK",
                    format!("x-aws-ec2-metadata-token-ttl-seconds: {ttl}\r\n"),
                    TOKEN.to_owned(),
                ),
                None => ("400 Bad Request", String::new(), String::new()),
            }
        } else if method == "GET" {
            if headers.get("x-aws-ec2-metadata-token").map(String::as_str) == Some(TOKEN) {
                match path
                    .strip_prefix("/latest/meta-data/")
                    .and_then(|p| items.get(p))
                {
                    Some(value) => ("200 OK", String::new(), value.clone()),
                    None => ("404 Not Found", String::new(), String::new()),
                }
            } else {
                ("401 Unauthorized", String::new(), String::new())
            }
        } else {
            ("405 Method Not Allowed", String::new(), String::new())
        };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
