//! Tests on SQLite alone: what only its file can show (modes, corruption, a
//! full disk, a crash, backups), and the HTTP layer's own bounds and probes
//! (limits, overload, slow clients, the container), which no store changes.

mod backup;
mod config_bounds;
mod container;
mod corruption;
mod crash;
mod disk_full;
mod file_safety;
mod interrupted_backup;
mod limits;
mod memory;
mod ops;
mod overload;
mod slow_clients;
mod sqlite_file;

pub fn tests() -> Vec<crate::harness::Test> {
    [
        backup::tests(),
        config_bounds::tests(),
        container::tests(),
        corruption::tests(),
        crash::tests(),
        disk_full::tests(),
        file_safety::tests(),
        interrupted_backup::tests(),
        limits::tests(),
        memory::tests(),
        ops::tests(),
        overload::tests(),
        slow_clients::tests(),
        sqlite_file::tests(),
    ]
    .concat()
}
