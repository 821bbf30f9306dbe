//! The image's runtime contract, read from the Dockerfile itself so that drift
//! is caught: the binary started with the image's ENTRYPOINT, CMD and ENV
//! passes the image's HEALTHCHECK.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// What the final stage of the Dockerfile says about running the binary.
#[derive(Debug, Default)]
struct Image {
    env: BTreeMap<String, String>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    healthcheck: Vec<String>,
    user: Option<String>,
}

/// Instructions with their continuation lines joined, comments dropped.
fn instructions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part.trim_end());
                current.push(' ');
            }
            None => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

fn exec_form(text: &str) -> Vec<String> {
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{text:?} is not the exec (JSON) form: {e}"))
}

fn parse_dockerfile(text: &str) -> Image {
    let mut image = Image::default();
    for instruction in instructions(text) {
        let (word, rest) = instruction.split_once(' ').unwrap_or((&instruction, ""));
        match word.to_ascii_uppercase().as_str() {
            // A new stage starts from scratch: only the last one runs.
            "FROM" => image = Image::default(),
            "ENV" => {
                for pair in rest.split_whitespace() {
                    let (key, value) = pair.split_once('=').expect("ENV KEY=VALUE");
                    image
                        .env
                        .insert(key.to_owned(), value.trim_matches('"').to_owned());
                }
            }
            "ENTRYPOINT" => image.entrypoint = exec_form(rest),
            "CMD" => image.cmd = exec_form(rest),
            "USER" => image.user = Some(rest.trim().to_owned()),
            "HEALTHCHECK" => {
                let (_, command) = rest.split_once("CMD").expect("HEALTHCHECK … CMD [...]");
                image.healthcheck = exec_form(command);
            }
            _ => {}
        }
    }
    image
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn the_binary_started_as_the_image_starts_it_passes_the_image_healthcheck() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Dockerfile"))
        .expect("a Dockerfile at the root");
    let image = parse_dockerfile(&text);
    assert_eq!(image.entrypoint, ["leasehold"]);
    assert_eq!(image.cmd, ["serve"]);
    let user = image.user.as_deref().expect("the image names a USER");
    assert!(!["root", "0", "0:0"].contains(&user), "runs as {user}");

    // The image's environment, moved onto this machine: the listen address
    // onto loopback and a free port, the /data volume into a temp folder.
    let listen = &image.env["LEASEHOLD_LISTEN"];
    assert_eq!(
        listen, "0.0.0.0:8474",
        "the container listens on every interface"
    );
    let db = Path::new(&image.env["LEASEHOLD_DB"]);
    assert!(
        db.starts_with("/data"),
        "the database is on the /data volume"
    );
    let data = TempDir::new().unwrap();
    let port = free_port();
    let mut env = image.env.clone();
    env.insert("LEASEHOLD_LISTEN".into(), format!("127.0.0.1:{port}"));
    let local_db = data.path().join(db.strip_prefix("/").unwrap());
    env.insert("LEASEHOLD_DB".into(), local_db.display().to_string());

    let mut command = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("LEASEHOLD_")) {
        command.env_remove(key);
    }
    let mut server = command
        .args(&image.cmd)
        .envs(&env)
        .current_dir(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");

    // The HEALTHCHECK as written, pointed at the port chosen here.
    let check: Vec<String> = image
        .healthcheck
        .iter()
        .map(|arg| arg.replace("127.0.0.1:8474", &format!("127.0.0.1:{port}")))
        .collect();
    assert!(check.iter().any(|a| a.ends_with("/readyz")), "{check:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let healthy = loop {
        let status = Command::new(&check[0])
            .args(&check[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("the healthcheck command runs");
        if status.success() || Instant::now() > deadline {
            break status.success();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = server.kill();
    let _ = server.wait();
    assert!(healthy, "{check:?} never succeeded");
    assert!(
        local_db.exists(),
        "the database was created at {}",
        local_db.display()
    );
}

fn the_dockerfile_reader_joins_continuations_and_keeps_the_last_stage() {
    let image = parse_dockerfile(
        "FROM a AS build\nENV X=1\nCMD [\"build\"]\nFROM b\n# note\nENV A=1 B=\"two\"\n\
         HEALTHCHECK --interval=1s \\\n    CMD [\"true\"]\nCMD [\"serve\"]\n",
    );
    assert_eq!(image.env.len(), 2);
    assert_eq!(image.env["B"], "two");
    assert_eq!(image.cmd, ["serve"]);
    assert_eq!(image.healthcheck, ["true"]);
}

crate::harness::tests! {
    [sync: the_binary_started_as_the_image_starts_it_passes_the_image_healthcheck,
        the_dockerfile_reader_joins_continuations_and_keeps_the_last_stage],
}
