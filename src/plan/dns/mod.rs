//! The DNS rules, pure and in one place: the records a node wants (`records`), the zones they go
//! to (`zones`), a zone's minimal changes with ownership records, placeholders and the deletion
//! guard (`zone_plan`), and the hosts file's managed block (`hosts_block`). `dns/` applies them.

pub mod hosts_block;
pub mod records;
pub mod zone_plan;
pub mod zones;
