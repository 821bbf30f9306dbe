// A pool's map on one <canvas>: its blocks laid along a Hilbert curve, so
// that neighbouring addresses stay neighbours on screen, each block coloured
// and patterned by what it holds. Addresses are BigInts (IPv6 alike).

export const PALETTE = {
  free: { fill: "#e4e8ec", mark: null, label: "free" },
  reserved: { fill: "#f2b33d", mark: "#7a4d00", label: "reserved (unconfirmed), hatched" },
  allocated: { fill: "#1f5fbf", mark: null, label: "allocated (confirmed), solid" },
  mixed: { fill: "#a97ee8", mark: "#3d1a78", label: "mixed (partly used), dotted" },
  child: { fill: "#7fc8b8", mark: "#0b4d40", label: "a child pool's block, striped" },
};
export const LARGEST = "#0f7b3a";
export const MAX_BITS = 16; // at most 65,536 blocks drawn

export function parseCidr(text) {
  const [address, length] = text.split("/");
  const v6 = address.includes(":");
  let value = 0n;
  if (v6) {
    const [head, tail] = address.split("::");
    const left = head ? head.split(":") : [];
    const right = tail ? tail.split(":") : [];
    const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
    for (const g of groups) value = (value << 16n) | BigInt(`0x${g}`);
  } else {
    for (const part of address.split(".")) value = (value << 8n) | BigInt(part);
  }
  return { v6, bits: v6 ? 128 : 32, value, length: Number(length) };
}

export function formatAddress(value, v6) {
  if (!v6) return [24n, 16n, 8n, 0n].map((s) => (value >> s) & 255n).join(".");
  const groups = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(Number((value >> s) & 0xffffn));
  // The longest run of zero groups (two or more) becomes "::" (RFC 5952).
  let best = [-1, 0];
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best[1] && j - i > 1) best = [i, j - i];
    i = j + 1;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best[0] < 0) return hex.join(":");
  return `${hex.slice(0, best[0]).join(":")}::${hex.slice(best[0] + best[1]).join(":")}`;
}

// The cell (x, y) of position d on a Hilbert curve filling a side × side square.
export function hilbert(side, d) {
  let x = 0, y = 0;
  for (let s = 1, t = d; s < side; s *= 2, t = Math.floor(t / 4)) {
    const rx = (t >> 1) & 1;
    const ry = (t ^ rx) & 1;
    if (ry === 0) {
      if (rx === 1) { x = s - 1 - x; y = s - 1 - y; }
      [x, y] = [y, x];
    }
    x += s * rx;
    y += s * ry;
  }
  return [x, y];
}

// Where each of 2^bits blocks goes: one square, or two side by side when
// bits is odd.
export function layout(bits) {
  const side = 2 ** Math.floor(bits / 2);
  const squares = bits % 2 ? 2 : 1;
  const cols = side * squares;
  const cell = Math.max(2, Math.min(48, Math.floor(512 / cols)));
  const count = 2 ** bits;
  const xy = new Int32Array(count * 2);
  const at = new Int32Array(cols * side);
  for (let i = 0; i < count; i++) {
    const square = Math.floor(i / (side * side));
    const [x, y] = hilbert(side, i % (side * side));
    xy[2 * i] = x + square * side;
    xy[2 * i + 1] = y;
    at[y * cols + x + square * side] = i;
  }
  return { cols, rows: side, cell, count, xy, at };
}

export function pattern(context, state) {
  const { fill, mark } = PALETTE[state];
  if (!mark) return fill;
  const tile = document.createElement("canvas");
  tile.width = tile.height = 4;
  const c = tile.getContext("2d");
  c.fillStyle = fill;
  c.fillRect(0, 0, 4, 4);
  c.fillStyle = mark;
  if (state === "reserved") for (let i = 0; i < 4; i++) c.fillRect(i, 3 - i, 1, 1);
  else if (state === "child") c.fillRect(0, 0, 1, 4);
  else c.fillRect(1, 1, 1, 1);
  return context.createPattern(tile, "repeat");
}

// Draws `runs` (in block order: [first index, count, state]) and marks the
// run `largest` (its index in runs, or -1) with an outline.
export function draw(canvas, grid, runs, largest) {
  canvas.width = grid.cols * grid.cell;
  canvas.height = grid.rows * grid.cell;
  const c = canvas.getContext("2d");
  const styles = Object.fromEntries(Object.keys(PALETTE).map((s) => [s, pattern(c, s)]));
  const { cell, xy } = grid;
  for (const [first, count, state] of runs) {
    c.fillStyle = styles[state];
    for (let i = first; i < first + count; i++) c.fillRect(xy[2 * i] * cell, xy[2 * i + 1] * cell, cell, cell);
  }
  if (largest < 0) return;
  const [first, count] = runs[largest];
  const inside = (x, y) => x >= 0 && y >= 0 && x < grid.cols && y < grid.rows
    && grid.at[y * grid.cols + x] >= first && grid.at[y * grid.cols + x] < first + count;
  c.strokeStyle = LARGEST;
  c.lineWidth = 2;
  c.beginPath();
  for (let i = first; i < first + count; i++) {
    const x = xy[2 * i], y = xy[2 * i + 1];
    const edges = [[0, -1, 0, 0, 1, 0], [0, 1, 0, 1, 1, 1], [-1, 0, 0, 0, 0, 1], [1, 0, 1, 0, 1, 1]];
    for (const [dx, dy, x0, y0, x1, y1] of edges) {
      if (inside(x + dx, y + dy)) continue;
      c.moveTo((x + x0) * cell + (x0 ? -1 : 1), (y + y0) * cell + (y0 ? -1 : 1));
      c.lineTo((x + x1) * cell + (x1 ? -1 : 1), (y + y1) * cell + (y1 ? -1 : 1));
    }
  }
  c.stroke();
}
