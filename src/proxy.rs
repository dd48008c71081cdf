//! Egress proxies as Go's `http.ProxyFromEnvironment` reads them (kOps' protokube honoured
//! them; nodeup writes `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` into protokube's environment
//! file for clusters with `spec.networking.egressProxy`): `HTTPS_PROXY` for `https://`
//! destinations, `HTTP_PROXY` for `http://` ones (upper case first, then lower case), `NO_PROXY`
//! exempting hosts, domains (and their subdomains), addresses and networks; `localhost` and
//! loopback addresses are never proxied (Go's rule), nor the addresses a caller names (a cloud's
//! metadata servers, which only the node itself can reach).

use std::net::IpAddr;

use hyper::header::HeaderValue;
use hyper::Uri;
use hyper_util::client::proxy::matcher::Matcher;

/// The node's proxy settings, read once from the environment.
#[derive(Debug)]
pub(crate) struct EgressProxies {
    matcher: Matcher,
    /// Addresses never proxied beside loopback (a cloud's metadata servers).
    direct: Vec<IpAddr>,
    /// The raw settings, for clients that take them as text (the AWS SDK's).
    pub(crate) http: Option<String>,
    pub(crate) https: Option<String>,
    pub(crate) no_proxy: String,
}

/// Where a request to one destination goes: straight there, or through a proxy.
#[derive(Clone, Debug)]
pub(crate) struct Route {
    pub(crate) proxy: Uri,
    /// `Proxy-Authorization` from the proxy URL's user and password.
    pub(crate) authorization: Option<HeaderValue>,
    /// The proxy's URL as the environment gives it, user and password included.
    pub(crate) url: String,
}

impl EgressProxies {
    /// The settings of this process' environment; `direct` (addresses) never proxied.
    pub(crate) fn from_env(direct: &[&str]) -> Self {
        Self::from_vars(|name| std::env::var(name).ok(), direct)
    }

    /// No proxy at all (a metadata server: link-local, only the node reaches it).
    pub(crate) fn none() -> Self {
        Self::from_vars(|_| None, &[])
    }

    /// The settings as `var` gives the environment (tests hand their own).
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>, direct: &[&str]) -> Self {
        let first = |names: [&str; 2]| {
            names
                .iter()
                .find_map(|name| var(name).filter(|v| !v.trim().is_empty()))
        };
        let http = first(["HTTP_PROXY", "http_proxy"]);
        let https = first(["HTTPS_PROXY", "https_proxy"]);
        let no_proxy = first(["NO_PROXY", "no_proxy"]).unwrap_or_default();
        let exempt = exemptions(&no_proxy, direct);
        let mut builder = Matcher::builder().no(exempt.clone());
        if let Some(http) = &http {
            builder = builder.http(with_scheme(http));
        }
        if let Some(https) = &https {
            builder = builder.https(with_scheme(https));
        }
        Self {
            matcher: builder.build(),
            direct: direct.iter().filter_map(|a| a.parse().ok()).collect(),
            http: http.as_deref().map(with_scheme),
            https: https.as_deref().map(with_scheme),
            no_proxy: exempt,
        }
    }

    /// The proxy a request to `destination` goes through, if any.
    pub(crate) fn route(&self, destination: &Uri) -> Option<Route> {
        let host = destination
            .host()?
            .trim_start_matches('[')
            .trim_end_matches(']');
        if never_proxied(host, &self.direct) {
            return None;
        }
        let url = match destination.scheme_str() {
            Some("https") => self.https.clone(),
            _ => self.http.clone(),
        }?;
        self.matcher.intercept(destination).map(|intercept| Route {
            proxy: intercept.uri().clone(),
            authorization: intercept.basic_auth().cloned(),
            url,
        })
    }
}

/// Go assumes `http://` for a proxy given without a scheme (`proxy:3128`).
fn with_scheme(proxy: &str) -> String {
    let proxy = proxy.trim();
    if proxy.contains("://") {
        proxy.to_owned()
    } else {
        format!("http://{proxy}")
    }
}

/// `NO_PROXY` with what is never proxied added: localhost, loopback, the `direct` addresses.
fn exemptions(no_proxy: &str, direct: &[&str]) -> String {
    let mut rules: Vec<&str> = no_proxy
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    rules.extend(["localhost", "127.0.0.0/8", "::1"]);
    rules.extend(direct);
    rules.join(",")
}

/// Go's `useProxy` refusals: `localhost` and loopback addresses; and the `direct` addresses.
fn never_proxied(host: &str, direct: &[IpAddr]) -> bool {
    if host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || direct.contains(&ip),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(vars: &[(&str, &str)]) -> EgressProxies {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        EgressProxies::from_vars(
            |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            &["169.254.169.254", "fd00:ec2::254"],
        )
    }

    fn via(p: &EgressProxies, url: &str) -> Option<String> {
        p.route(&url.parse().unwrap()).map(|r| r.proxy.to_string())
    }

    #[test]
    fn https_and_http_destinations_take_their_own_proxy() {
        let p = proxies(&[
            ("HTTPS_PROXY", "http://secure.proxy:3128"),
            ("http_proxy", "plain.proxy:8080"),
        ]);
        assert_eq!(
            via(&p, "https://compute.googleapis.com/compute/v1/").as_deref(),
            Some("http://secure.proxy:3128/")
        );
        assert_eq!(
            via(&p, "http://example.com/").as_deref(),
            Some("http://plain.proxy:8080/")
        );
        let only_https = proxies(&[("HTTPS_PROXY", "http://secure.proxy:3128")]);
        assert_eq!(via(&only_https, "http://example.com/"), None);
    }

    #[test]
    fn no_proxy_loopback_and_the_direct_addresses_go_direct() {
        let p = proxies(&[
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("NO_PROXY", "internal.example.com, 10.0.0.0/8,.svc"),
        ]);
        for direct in [
            "https://api.internal.example.com/",
            "https://internal.example.com/",
            "https://10.1.2.3:443/",
            "https://kubernetes.default.svc/",
            "https://127.0.0.1:6443/",
            "https://[::1]:6443/",
            "https://localhost:443/",
            "http://169.254.169.254/computeMetadata/v1/",
            "http://[fd00:ec2::254]/latest/",
        ] {
            assert_eq!(via(&p, direct), None, "{direct}");
        }
        assert!(via(&p, "https://dns.googleapis.com/").is_some());
        assert!(via(&p, "https://11.0.0.1/").is_some());
    }

    #[test]
    fn the_proxy_user_becomes_proxy_authorization() {
        let p = proxies(&[("HTTPS_PROXY", "http://user:secret@proxy:3128")]);
        let route = p.route(&"https://example.com/".parse().unwrap()).unwrap();
        assert_eq!(
            route.authorization.unwrap().to_str().unwrap(),
            "Basic dXNlcjpzZWNyZXQ="
        );
    }

    #[test]
    fn nothing_set_is_no_proxy() {
        let p = proxies(&[]);
        assert!(p.http.is_none() && p.https.is_none());
        assert_eq!(via(&p, "https://example.com/"), None);
    }
}
