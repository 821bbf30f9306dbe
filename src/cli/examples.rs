//! The examples that `--help` shows under each client command. Two secrets
//! must not be confused: the lease token (`token: …` in the answer to a grant,
//! 32 hex digits) proves who holds a lease; the API token (`lh_…`, from
//! `leasehold token new`) authenticates the client to a server with an auth
//! file. The examples name them `$LEASE_TOKEN` and `LEASEHOLD_TOKEN`.

pub const LOCK: &str = "\
Examples:
  # Take lb/3f2a for 30s; keep the lease token it prints (token: …)
  LEASE_TOKEN=$(leasehold lock acquire lb/3f2a --ttl 30s --json | sed -n 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/p')
  leasehold lock renew lb/3f2a \"$LEASE_TOKEN\" --ttl 1m
  leasehold lock show lb/3f2a
  leasehold lock release lb/3f2a \"$LEASE_TOKEN\"
  # Run a command under the lock, renewed while it runs
  leasehold lock run backup/db --ttl 30s --wait 10m -- /usr/local/bin/backup-db
  # Against a server with an auth file, the API token authenticates:
  LEASEHOLD_TOKEN=lh_… leasehold lock list --prefix lb/";

pub const LOCK_RUN: &str = "\
Examples:
  leasehold lock run backup/db --ttl 30s --wait 10m -- /usr/local/bin/backup-db
  leasehold lock run lb/3f2a -- sh -c 'reconcile --fencing-token \"$LEASEHOLD_FENCING_TOKEN\"'
  # Three keys, all or none, kept by one session renewed every few seconds
  leasehold lock run svc/a --key svc/b --key svc/c --wait 1m -- sh -c 'echo \"$LEASEHOLD_KEYS\"'
  # Four of the key's capacity of GPUs (leasehold lock capacity set gpu/pool 8)
  leasehold lock run gpu/pool --permits 4 --wait 1h -- ./train.sh";

pub const LOCK_ACQUIRE: &str = "\
Examples:
  leasehold lock acquire lb/3f2a --ttl 30s --wait 5s   # prints the lease and its lease token
  leasehold lock acquire pool/gpu --max-holders 3      # one of 3 slots (a semaphore)
  leasehold lock acquire gpu/pool --permits 2          # 2 of the key's stored capacity
  leasehold lock acquire cfg/main --shared             # readers share
  # The lease token, for renew and release:
  LEASE_TOKEN=$(leasehold lock acquire lb/3f2a --json | sed -n 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/p')";

pub const LOCK_RENEW: &str = "\
Examples:
  leasehold lock renew lb/3f2a \"$LEASE_TOKEN\" --ttl 1m
  leasehold lock renew lb/3f2a --lease-token \"$LEASE_TOKEN\"
  # With an auth file, the API token too (--api-token, or LEASEHOLD_TOKEN):
  leasehold lock renew lb/3f2a \"$LEASE_TOKEN\" --api-token \"$API_TOKEN\"";

pub const LOCK_RELEASE: &str = "\
Examples:
  leasehold lock release lb/3f2a \"$LEASE_TOKEN\"
  leasehold lock release lb/3f2a --lease-token \"$LEASE_TOKEN\"
  leasehold lock release lb/3f2a --force     # admin: every lease on the key, no lease token";

pub const SESSION: &str = "\
Examples:
  # One heartbeat for many locks: open a session, bind locks to it, keep it alive
  leasehold session open --ttl 30s --json > session.json
  ID=$(sed -n 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/p' session.json)
  SESSION_TOKEN=$(sed -n 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/p' session.json)
  leasehold session renew \"$ID\" \"$SESSION_TOKEN\"
  leasehold session show \"$ID\"             # what it holds: its counts, then each lease
  leasehold session list                   # every live session this API token may see
  leasehold session close \"$ID\" \"$SESSION_TOKEN\"   # releases every lease bound to it";

pub const LOCK_CHECK: &str = "\
Examples:
  # Before applying a write fenced with token 42: exit 0 if current, 9 if not
  leasehold lock check db/primary 42
  leasehold lock check db/primary 42 --json";

pub const LOCK_SHOW: &str = "\
Examples:
  leasehold lock show lb/3f2a              # who holds it, \"expires in 28s\"
  leasehold lock show lb/3f2a --json";

pub const LOCK_HISTORY: &str = "\
Examples:
  leasehold lock history lb/3f2a           # who held it, how each lease ended
  leasehold lock history lb/3f2a --limit 5 --json";

pub const LOCK_CAPACITY: &str = "\
Examples:
  leasehold lock capacity set gpu/pool 8      # leases of gpu/pool hold 8 permits in all
  leasehold lock capacity show gpu/pool       # the capacity, what is held and asked
  leasehold lock capacity delete gpu/pool     # once nothing is held";

pub const LOCK_LIST: &str = "\
Examples:
  leasehold lock list --prefix lb/
  leasehold lock list --limit 100 --cursor \"$NEXT_CURSOR\"";

pub const POOL: &str = "\
Examples:
  leasehold pool put docker 10.0.0.0/8 --label driver=bridge
  leasehold pool show docker
  leasehold pool list
  leasehold pool delete docker";

pub const POOL_PUT: &str = "\
Examples:
  leasehold pool put docker 10.0.0.0/8 --label driver=bridge
  leasehold pool put v6 fd00::/48
  leasehold pool create eu 10.1.0.0/16 --parent docker --rule default_prefix_len=24";

pub const POOL_SHOW: &str = "\
Examples:
  leasehold pool show docker               # counts, free addresses, largest free block";

pub const POOL_LIST: &str = "\
Examples:
  leasehold pool list --json";

pub const POOL_DELETE: &str = "\
Examples:
  leasehold pool delete docker             # refused (exit 3) while it has live reservations";

pub const LIMIT: &str = "\
Examples:
  leasehold limit define api/search --rate 100 --period 1s --burst 20
  leasehold limit define tenants/ --rate 10 --period 1m   # a bucket per name under it
  leasehold limit take api/search                          # refused (exit 8) when empty
  leasehold limit take tenants/acme --cost 2 --wait 5s
  leasehold limit show api/search
  leasehold limit list --prefix api/
  leasehold limit delete api/search";

pub const SUBNET: &str = "\
Examples:
  out=$(leasehold subnet reserve --pool docker --prefix-len 24 --json)
  id=$(echo \"$out\" | sed -n 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/p')
  LEASE_TOKEN=$(echo \"$out\" | sed -n 's/.*\"token\":\"\\([^\"]*\\)\".*/\\1/p')
  leasehold subnet confirm --pool docker \"$id\" \"$LEASE_TOKEN\"
  leasehold subnet list --pool docker";

pub const SUBNET_RESERVE: &str = "\
Examples:
  leasehold subnet reserve --pool docker --prefix-len 24 --exclude 172.17.0.0/16 --ttl 1m
  leasehold subnet reserve --pool docker --prefix-len 24 --exclude-local
  leasehold subnet reserve --pool docker --subnet 10.0.3.0/24";

pub const SUBNET_RENEW: &str = "\
Examples:
  leasehold subnet renew --pool docker \"$id\" \"$LEASE_TOKEN\" --ttl 1m";

pub const SUBNET_CONFIRM: &str = "\
Examples:
  leasehold subnet confirm --pool docker \"$id\" \"$LEASE_TOKEN\"
  leasehold subnet confirm --pool docker \"$id\" --lease-token \"$LEASE_TOKEN\"";

pub const SUBNET_RELEASE: &str = "\
Examples:
  leasehold subnet release --pool docker \"$id\" \"$LEASE_TOKEN\"
  leasehold subnet release --pool docker \"$id\" --force    # admin: without the lease token";

pub const SUBNET_SHOW: &str = "\
Examples:
  leasehold subnet show --pool docker \"$id\"";

pub const SUBNET_LIST: &str = "\
Examples:
  leasehold subnet list --pool docker";

pub const ELECT: &str = "\
Examples:
  # Run the scheduler on one host at a time; another campaigner takes over when it fails
  leasehold elect scheduler --ttl 10s --kill-after 2s -- /usr/local/bin/scheduler
  leasehold elect scheduler --once -- /usr/local/bin/scheduler   # exit (6) once leadership is lost
  # Who leads, one line per change (--json for scripts)
  leasehold elect scheduler --observe --json";

pub const WATCH: &str = "\
Examples:
  leasehold watch --prefix lb/              # lock events under lb/, as they happen
  leasehold watch --pool docker --json      # one JSON object per line
  leasehold watch --since 1200              # every event after revision 1200";

pub const STATUS: &str = "\
Examples:
  leasehold status                         # counts of what the API token may read, the database
  leasehold status --json                  # the server's answer, one line
  LEASEHOLD_TOKEN=lh_… leasehold status    # as that token sees it (admin: yes or no)";
