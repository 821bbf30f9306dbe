//! A lean HTTP/1.1 client on one kept-alive connection: a request written in
//! one `write`, the answer read by `Content-Length` (or chunks). As cheap per
//! request as the RESP client the Redis workloads use, so that on a machine
//! the load generator shares with the system under test, an HTTP system is
//! not charged for a heavier client.

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::Result;

pub struct Http {
    address: String,
    stream: Option<BufReader<TcpStream>>,
    line: String,
}

/// An answer: its status and body.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::from_slice(&self.body)?)
    }
}

impl Http {
    pub async fn connect(address: &str) -> Result<Self> {
        let mut http = Self {
            address: address.to_owned(),
            stream: None,
            line: String::new(),
        };
        http.stream = Some(http.open().await?);
        Ok(http)
    }

    async fn open(&self) -> Result<BufReader<TcpStream>> {
        let stream = TcpStream::connect(&self.address).await?;
        stream.set_nodelay(true)?;
        Ok(BufReader::new(stream))
    }

    pub async fn post(&mut self, path: &str, body: &serde_json::Value) -> Result<Answer> {
        self.call("POST", path, Some(&serde_json::to_vec(body)?))
            .await
    }

    pub async fn put(&mut self, path: &str, body: &serde_json::Value) -> Result<Answer> {
        self.call("PUT", path, Some(&serde_json::to_vec(body)?))
            .await
    }

    pub async fn get(&mut self, path: &str) -> Result<Answer> {
        self.call("GET", path, None).await
    }

    async fn call(&mut self, method: &str, path: &str, body: Option<&[u8]>) -> Result<Answer> {
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.address);
        if let Some(body) = body {
            request.push_str("Content-Type: application/json\r\n");
            request.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        request.push_str("\r\n");
        let mut bytes = request.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        let mut stream = match self.stream.take() {
            Some(stream) => stream,
            None => self.open().await?,
        };
        stream.get_mut().write_all(&bytes).await?;
        let answer = read_answer(&mut stream, &mut self.line).await?;
        if !answer.1 {
            self.stream = Some(stream);
        }
        Ok(answer.0)
    }
}

/// Reads one answer; also whether the server closes the connection after it.
async fn read_answer(
    stream: &mut BufReader<TcpStream>,
    line: &mut String,
) -> Result<(Answer, bool)> {
    line.clear();
    if stream.read_line(line).await? == 0 {
        return Err("the connection closed before an answer".into());
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .ok_or("no status line")?
        .parse()?;
    let (mut length, mut chunked, mut close) = (None, false, false);
    loop {
        line.clear();
        stream.read_line(line).await?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>()?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            stream.read_line(line).await?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)?;
            let at = body.len();
            body.resize(at + size, 0);
            stream.read_exact(&mut body[at..]).await?;
            line.clear();
            stream.read_line(line).await?;
            if size == 0 {
                break;
            }
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        stream.read_exact(&mut body).await?;
    } else if close {
        stream.read_to_end(&mut body).await?;
    }
    Ok((Answer { status, body }, close))
}
