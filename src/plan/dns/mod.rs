//! The DNS rules, pure and in one place: the records a node wants (`records`), the zones they go
//! to (`zones`), a zone's minimal changes with ownership records, placeholders and the deletion
//! guard (`zone_plan`), and the hosts file's managed block (`hosts_block`). `dns/` applies them.

pub(crate) mod hosts_block;
pub(crate) mod records;
pub(crate) mod zone_plan;
pub(crate) mod zones;
