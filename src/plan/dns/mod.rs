//! The DNS rules, pure and in one place: the records a node wants (`records`), the zones they go
//! to (`zones`), a zone's minimal changes with ownership records, placeholders and the deletion
//! guard (`zoned`), and the hosts file's managed block (`hosts`). `dns/` applies them.

pub mod hosts;
pub mod records;
pub mod zoned;
pub mod zones;
