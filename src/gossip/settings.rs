//! The member's settings, checked before anything listens: the protocols and their ports as
//! kOps' flags give them, the secrets, the seeds given by hand, the connection limit.

use std::net::{IpAddr, SocketAddr};

use super::view::Protocol;

/// One protocol's place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) protocol: Protocol,
    pub(crate) listen: SocketAddr,
    pub(crate) secret: String,
}

/// A seed given by hand: an address, and a port unless the protocol's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seed {
    pub(crate) ip: IpAddr,
    pub(crate) port: Option<u16>,
}

/// Connections (established or in handshake) per protocol when `GOSSIP_DNS_CONN_LIMIT` is
/// unset or 0 (kOps: no limit; here a bound all the same).
pub(crate) const DEFAULT_CONN_LIMIT: usize = 1024;

/// The member's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GossipSettings {
    pub(crate) primary: Endpoint,
    pub(crate) secondary: Option<Endpoint>,
    pub(crate) seeds: Vec<Seed>,
    pub(crate) seeds_secondary: Vec<Seed>,
    pub(crate) conn_limit: usize,
}

/// The gossip flags as given (`None`: kOps' default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GossipInput<'a> {
    pub(crate) protocol: Option<&'a str>,
    pub(crate) listen: Option<&'a str>,
    pub(crate) secret: Option<&'a str>,
    pub(crate) protocol_secondary: Option<&'a str>,
    pub(crate) listen_secondary: Option<&'a str>,
    pub(crate) secret_secondary: Option<&'a str>,
    pub(crate) seeds: &'a [String],
    pub(crate) seeds_secondary: &'a [String],
    pub(crate) conn_limit: Option<usize>,
}

impl GossipSettings {
    /// Checks the flags: one line naming the flag and what to give when one is wrong.
    pub(crate) fn resolve(input: &GossipInput<'_>) -> Result<Self, String> {
        let primary = endpoint(
            "--gossip-protocol",
            input.protocol.unwrap_or("mesh"),
            "--gossip-listen",
            input.listen.unwrap_or("0.0.0.0:3999"),
            input.secret.unwrap_or_default(),
        )?;
        let secondary = match input.protocol_secondary.unwrap_or("memberlist") {
            "" => None,
            word => Some(endpoint(
                "--gossip-protocol-secondary",
                word,
                "--gossip-listen-secondary",
                input.listen_secondary.unwrap_or("0.0.0.0:4000"),
                input.secret_secondary.unwrap_or_default(),
            )?),
        };
        if let Some(secondary) = &secondary {
            if secondary.protocol == primary.protocol {
                return Err(format!(
                    "--gossip-protocol-secondary `{}` is the primary's protocol too: give the \
                     other one, or an empty value for none",
                    secondary.protocol.as_str()
                ));
            }
        }
        Ok(Self {
            primary,
            secondary,
            seeds: seeds("--gossip-seed", input.seeds)?,
            seeds_secondary: seeds("--gossip-seed-secondary", input.seeds_secondary)?,
            conn_limit: match input.conn_limit {
                None | Some(0) => DEFAULT_CONN_LIMIT,
                Some(limit) => limit,
            },
        })
    }

    /// The protocols' places, primary first.
    pub(crate) fn endpoints(&self) -> impl Iterator<Item = &Endpoint> {
        std::iter::once(&self.primary).chain(self.secondary.as_ref())
    }
}

fn endpoint(
    protocol_flag: &str,
    word: &str,
    listen_flag: &str,
    listen: &str,
    secret: &str,
) -> Result<Endpoint, String> {
    let protocol = Protocol::parse(word).ok_or_else(|| {
        format!(
            "{protocol_flag} `{}` is not a gossip protocol: give `mesh` or `memberlist`",
            word.escape_debug()
        )
    })?;
    Ok(Endpoint {
        protocol,
        listen: listen_address(listen).ok_or_else(|| {
            format!(
                "{listen_flag} `{}` is not an address to listen on: give IP:PORT, e.g. \
                 `0.0.0.0:3999`",
                listen.escape_debug()
            )
        })?,
        secret: secret.to_owned(),
    })
}

/// `IP:PORT`, or Go's `:PORT` for every address.
fn listen_address(text: &str) -> Option<SocketAddr> {
    match text.strip_prefix(':') {
        Some(port) => Some(SocketAddr::new(
            IpAddr::from([0, 0, 0, 0]),
            port.parse().ok()?,
        )),
        None => text.parse().ok(),
    }
}

fn seeds(flag: &str, given: &[String]) -> Result<Vec<Seed>, String> {
    given
        .iter()
        .map(|text| {
            let text = text.trim();
            if let Ok(addr) = text.parse::<SocketAddr>() {
                return Ok(Seed {
                    ip: addr.ip(),
                    port: Some(addr.port()),
                });
            }
            text.parse::<IpAddr>()
                .map(|ip| Seed { ip, port: None })
                .map_err(|_| {
                    format!(
                        "{flag} `{}` is not a seed: give an IP address, or IP:PORT",
                        text.escape_debug()
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kops_defaults_and_every_bad_flag_named() {
        let settings = GossipSettings::resolve(&GossipInput::default()).unwrap();
        assert_eq!(settings.primary.protocol, Protocol::Mesh);
        assert_eq!(settings.primary.listen.port(), 3999);
        let secondary = settings.secondary.unwrap();
        assert_eq!(
            (secondary.protocol, secondary.listen.port()),
            (Protocol::Memberlist, 4000)
        );
        assert_eq!(secondary.secret, "", "not the primary's secret, as kOps");
        assert_eq!(settings.conn_limit, DEFAULT_CONN_LIMIT);
        let none = GossipSettings::resolve(&GossipInput {
            protocol: Some("memberlist"),
            listen: Some(":4000"),
            protocol_secondary: Some(""),
            seeds: &["10.0.0.1".into(), "[fd00::1]:3999".into()],
            ..GossipInput::default()
        })
        .unwrap();
        assert!(none.secondary.is_none());
        assert_eq!(none.seeds[1].port, Some(3999));
        for (input, flag) in [
            (
                GossipInput {
                    protocol: Some("weave"),
                    ..GossipInput::default()
                },
                "--gossip-protocol `weave`",
            ),
            (
                GossipInput {
                    listen: Some("3999"),
                    ..GossipInput::default()
                },
                "--gossip-listen `3999`",
            ),
            (
                GossipInput {
                    protocol_secondary: Some("mesh"),
                    ..GossipInput::default()
                },
                "primary's protocol",
            ),
            (
                GossipInput {
                    seeds: &["host\n".into()],
                    ..GossipInput::default()
                },
                "--gossip-seed `host`",
            ),
        ] {
            let err = GossipSettings::resolve(&input).unwrap_err();
            assert!(err.contains(flag), "{err}");
        }
    }
}
