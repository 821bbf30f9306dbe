//! The group-commit writer on a real SQLite file, raced for real: shared
//! commits, failures that stay their own whether undone or kept, batches
//! run again only for a failure that must be undone, a transaction SQLite
//! rolled back itself, closing.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::store::sql::{Columns, Sql, args};

/// The connection as a transaction runs statements on it.
fn sql(conn: &mut Conn) -> &mut dyn Sql {
    conn
}

/// The table's file, read by a connection of the test's own.
struct File(std::path::PathBuf);

impl File {
    fn count(&self, sql: &str) -> i64 {
        rusqlite::Connection::open(&self.0)
            .unwrap()
            .query_row(sql, [], |row| row.get(0))
            .unwrap()
    }

    fn keys(&self) -> Vec<String> {
        let db = rusqlite::Connection::open(&self.0).unwrap();
        let mut keys = db.prepare("SELECT k FROM t").unwrap();
        keys.query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }
}

async fn writer_on_a_fresh_file() -> (tempfile::TempDir, File, Writer, Arc<StoreStats>) {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("w.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (k TEXT PRIMARY KEY)")
        .unwrap();
    let stats = Arc::new(StoreStats::default());
    let writer = Writer::start(path.clone(), Durability::Full, stats.clone());
    (dir, File(path), writer, stats)
}

fn insert(
    k: String,
) -> impl for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<bool>> + Send + 'static {
    counted_insert(k, Arc::default())
}

/// `insert`, adding one to `runs` each time it runs.
fn counted_insert(
    k: String,
    runs: Arc<AtomicUsize>,
) -> impl for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<bool>> + Send + 'static {
    move |conn| {
        runs.fetch_add(1, Ordering::Relaxed);
        let k = k.clone();
        Box::pin(async move {
            // A second insert of one key sees the first, even in the same batch.
            let taken = sql(conn)
                .row("SELECT k FROM t WHERE k = $1", args![&k])
                .await?;
            if let Some(row) = taken {
                assert_eq!(row.text("k")?, k);
                return Ok(false);
            }
            sql(conn)
                .execute("INSERT INTO t (k) VALUES ($1)", args![&k])
                .await?;
            if k.starts_with("fail") {
                return Err(StoreError::Internal("this write fails after writing".into()).into());
            }
            Ok(true)
        })
    }
}

#[tokio::test]
async fn concurrent_writes_share_commits_and_a_failure_stays_its_own() {
    let (_dir, file, writer, stats) = writer_on_a_fresh_file().await;
    let writer = Arc::new(writer);
    let mut tasks = vec![];
    for i in 0..200 {
        let writer = writer.clone();
        let key = match i % 10 {
            0 => format!("fail-{i}"),
            1 => "contested".to_owned(),
            _ => format!("k-{i}"),
        };
        tasks.push(tokio::spawn(async move { writer.write(insert(key)).await }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(true) => won += 1,
            Ok(false) => {}
            Err(Error::Storage(StoreError::Internal(_) | StoreError::Duplicate(_))) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    // 160 distinct keys + one winner of "contested"; the failed writes left nothing.
    assert_eq!(won, 161);
    writer.close().await;
    assert_eq!(file.count("SELECT count(*) FROM t"), 161);
    assert_eq!(file.count("SELECT count(*) FROM t WHERE k LIKE 'fail%'"), 0);
    let (batches, writes) = (stats.batch_size.count(), stats.batch_size.sum() as u64);
    assert_eq!(writes, 200);
    assert!(batches < writes, "{writes} writes took {batches} commits");
}

#[tokio::test]
async fn only_a_failure_that_must_be_undone_runs_its_batch_again() {
    let (_dir, file, writer, _stats) = writer_on_a_fresh_file().await;
    let writer = Arc::new(writer);
    // Writes that succeed, and guarded writes that fail before changing
    // anything (their key is taken, then they fail): no batch runs again.
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = vec![];
    for i in 0..100 {
        let (writer, runs) = (writer.clone(), runs.clone());
        tasks.push(tokio::spawn(async move {
            writer
                .write(move |conn| {
                    runs.fetch_add(1, Ordering::Relaxed);
                    Box::pin(async move {
                        if i % 10 == 0 {
                            sql(conn).row("SELECT 1 AS one", args![]).await?;
                            return Err(
                                StoreError::Internal("refused before writing".into()).into()
                            );
                        }
                        let key = format!("a-{i}");
                        sql(conn)
                            .execute("INSERT INTO t (k) VALUES ($1)", args![&key])
                            .await?;
                        Ok(())
                    })
                })
                .await
        }));
    }
    for task in tasks {
        let _ = task.await.unwrap();
    }
    assert_eq!(runs.load(Ordering::Relaxed), 100);
    assert_eq!(file.count("SELECT count(*) FROM t"), 90);

    // Guarded writes that fail after writing, among writes that succeed:
    // the first of a batch to fail runs twice (straight through, then in
    // its savepoint), a later one of that batch only in its savepoint;
    // every write runs once or twice, and the others land once.
    let (failing, others) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut tasks = vec![];
    for i in 0..100 {
        let writer = writer.clone();
        let (key, runs) = if i % 10 == 0 {
            (format!("fail-{i}"), failing.clone())
        } else {
            (format!("b-{i}"), others.clone())
        };
        tasks.push(tokio::spawn(async move {
            writer.write(counted_insert(key, runs)).await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(true) => won += 1,
            Err(Error::Storage(StoreError::Internal(_) | StoreError::Duplicate(_))) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(won, 90);
    let failing = failing.load(Ordering::Relaxed);
    assert!(
        (11..=20).contains(&failing),
        "{failing} runs of 10 failing writes"
    );
    let others = others.load(Ordering::Relaxed);
    assert!((90..=180).contains(&others), "{others} runs of 90 writes");
    writer.close().await;
    assert_eq!(file.count("SELECT count(*) FROM t WHERE k LIKE 'b-%'"), 90);
    assert_eq!(file.count("SELECT count(*) FROM t WHERE k LIKE 'fail%'"), 0);
}

#[tokio::test]
async fn a_transaction_sqlite_rolled_back_itself_fails_as_unavailable() {
    let (_dir, file, writer, stats) = writer_on_a_fresh_file().await;
    // What SQLite does on some disk errors: the whole transaction is gone,
    // so the write's savepoint cannot be rolled back to.
    let failed = writer
        .write(|conn| {
            Box::pin(async move {
                sql(conn)
                    .execute("INSERT INTO t (k) VALUES ('lost')", args![])
                    .await?;
                conn.batch("ROLLBACK")?;
                Err::<(), _>(StoreError::Unavailable("database or disk is full".into()).into())
            })
        })
        .await;
    assert!(
        matches!(failed, Err(Error::Storage(StoreError::Unavailable(_)))),
        "{failed:?}"
    );
    assert!(stats.storage_failed_within(Duration::from_secs(60)));
    assert_eq!(
        stats
            .storage_failures
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // The writer goes on, on a fresh connection.
    assert!(writer.write(insert("after".into())).await.unwrap());
    writer.close().await;
    assert_eq!(file.keys(), ["after"]);
}

#[tokio::test]
async fn a_failed_write_without_savepoint_leaves_the_batch_whole() {
    let (_dir, file, writer, stats) = writer_on_a_fresh_file().await;
    let writer = Arc::new(writer);
    let mut tasks = vec![];
    for i in 0..200 {
        let writer = writer.clone();
        // Every tenth write inserts a key another write inserts too, so
        // its one statement fails; guarded failures are mixed in.
        let key = if i % 10 == 0 {
            format!("k-{}", i + 1)
        } else {
            format!("k-{i}")
        };
        let guarded_failure = i % 10 == 5;
        tasks.push(tokio::spawn(async move {
            if guarded_failure {
                return writer.write(insert(format!("fail-{i}"))).await;
            }
            writer
                .write_unguarded(move |conn| {
                    let key = key.clone();
                    Box::pin(async move {
                        sql(conn)
                            .execute("INSERT INTO t (k) VALUES ($1)", args![&key])
                            .await?;
                        Ok(true)
                    })
                })
                .await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::Storage(StoreError::Internal(_) | StoreError::Duplicate(_))) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    writer.close().await;
    let rows = file.count("SELECT count(*) FROM t");
    // Eight distinct keys in every ten writes (one repeats the next one's key,
    // one fails in its savepoint), and no "fail-" row.
    assert_eq!(rows, 160);
    assert_eq!(won, 160);
    assert!(stats.batch_size.count() < 200);
}

/// A write that inserts its key, then panics.
fn panicking_insert(
    k: String,
) -> impl for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<bool>> + Send + 'static {
    move |conn| {
        let k = k.clone();
        Box::pin(async move {
            sql(conn)
                .execute("INSERT INTO t (k) VALUES ($1)", args![&k])
                .await?;
            panic!("a write of {k} panics after writing");
        })
    }
}

#[tokio::test]
async fn a_write_that_panics_fails_alone_and_the_writer_goes_on() {
    let (_dir, file, writer, _stats) = writer_on_a_fresh_file().await;
    let writer = Arc::new(writer);
    let mut tasks = vec![];
    for i in 0..60 {
        let writer = writer.clone();
        tasks.push(tokio::spawn(async move {
            if i % 6 == 0 {
                writer.write(panicking_insert(format!("panic-{i}"))).await
            } else {
                writer.write(insert(format!("k-{i}"))).await
            }
        }));
    }
    let mut won = 0;
    for (i, task) in tasks.into_iter().enumerate() {
        match task.await.unwrap() {
            Ok(true) if i % 6 != 0 => won += 1,
            Err(Error::Storage(StoreError::Internal(said))) if i % 6 == 0 => {
                assert!(said.contains("failed unexpectedly"), "{said}");
            }
            other => panic!("write {i} answered {other:?}"),
        }
    }
    assert_eq!(won, 50);
    // Later writes still commit: the writer thread lives on.
    assert!(writer.write(insert("after".into())).await.unwrap());
    writer.close().await;
    assert_eq!(file.count("SELECT count(*) FROM t"), 51);
    assert_eq!(
        file.count("SELECT count(*) FROM t WHERE k LIKE 'panic%'"),
        0
    );
}

#[tokio::test]
async fn a_closed_writer_refuses_new_writes() {
    let (_dir, _file, writer, _stats) = writer_on_a_fresh_file().await;
    assert!(writer.write(insert("a".into())).await.unwrap());
    writer.close().await;
    assert!(matches!(
        writer.write(insert("b".into())).await,
        Err(Error::Storage(StoreError::Unavailable(_)))
    ));
}

#[tokio::test]
async fn a_kept_statement_is_not_compiled_again_for_each_value_bound() {
    let (dir, _file, writer, _stats) = writer_on_a_fresh_file().await;
    writer.close().await;
    let mut conn = Conn::open_writer(&dir.path().join("w.db"), Durability::Full).unwrap();
    sql(&mut conn)
        .execute("INSERT INTO t (k) VALUES ('a'), ('b'), ('c')", args![])
        .await
        .unwrap();
    // A bound `LIMIT`, as every reaper batch and page of a listing has.
    let select = "SELECT k FROM t WHERE k > $1 ORDER BY k LIMIT $2";
    for limit in 1..=3_i64 {
        let rows = sql(&mut conn).rows(select, args!["", limit]).await.unwrap();
        assert_eq!(rows.len() as i64, limit);
    }
    assert_eq!(conn.recompiled(select), 0);
}

#[tokio::test]
async fn a_text_of_several_statements_answers_the_rows_of_those_that_answer() {
    let (dir, _file, writer, _stats) = writer_on_a_fresh_file().await;
    writer.close().await;
    let mut conn = Conn::open_writer(&dir.path().join("w.db"), Durability::Full).unwrap();
    // Each statement binds the arguments it names, in whatever order.
    let insert = "INSERT INTO t (k) VALUES ($2); \
                  SELECT k, last_insert_rowid() AS id FROM t WHERE k = $2 AND changes() > 0; ";
    let row = sql(&mut conn)
        .row(insert, args!["unused", "a"])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.text("k").unwrap(), "a");
    let first = row.int("id").unwrap();
    // A statement that changes nothing leaves `changes()` at 0, so the
    // read-back answers nothing rather than the row written before.
    let none = "INSERT INTO t (k) SELECT $1 WHERE $1 = 'never'; \
                SELECT last_insert_rowid() AS id WHERE changes() > 0";
    assert!(
        sql(&mut conn)
            .row(none, args!["b"])
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        sql(&mut conn)
            .execute(insert, args!["", "b"])
            .await
            .unwrap(),
        1
    );
    // Rows come from every statement that answers any, in order.
    let both = "SELECT k FROM t WHERE k = 'a'; DELETE FROM t WHERE k = 'z'; \
                SELECT k FROM t WHERE k = 'b'";
    let rows = sql(&mut conn).rows(both, args![]).await.unwrap();
    let keys: Vec<String> = rows.iter().map(|r| r.text("k").unwrap()).collect();
    assert_eq!(keys, ["a", "b"]);
    let ids = sql(&mut conn)
        .rows("SELECT rowid AS id FROM t ORDER BY rowid", args![])
        .await
        .unwrap();
    assert_eq!(ids[0].int("id").unwrap(), first);
    assert_eq!(ids.len(), 2);
}
