//! kOps' gossip DNS (docs/gossip.md): the wire of its two protocols. The member that joins
//! the network and keeps the hosts block from its view builds on `wire` (issue 48, in
//! progress); until it lands the wire is exercised by its own tests only.

pub(crate) mod mesh_connection;
pub(crate) mod wire;
