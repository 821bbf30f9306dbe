package leasehold_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goBlocks returns the ```go blocks of a Markdown file.
func goBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// Every Go block of both READMEs, and of the clients' guide, is an example
// that go test runs and checks, as written: nothing in them is undefined or
// untried.
func TestReadmeGoBlocksAreTheseExamples(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, readme := range []string{"README.md", filepath.Join("..", "..", "README.md"), filepath.Join("..", "..", "docs", "clients.md")} {
		blocks := goBlocks(t, readme)
		if len(blocks) == 0 {
			t.Errorf("%s has no Go block", readme)
		}
		for i, b := range blocks {
			first := strings.SplitN(b, "\n", 2)[0]
			if !strings.Contains(string(src), b) {
				t.Errorf("%s, Go block %d (%s): not in example_test.go as written", readme, i+1, first)
			}
			if !strings.Contains(b, "func Example") || !strings.Contains(b, "// Output:") {
				t.Errorf("%s, Go block %d (%s): not an Example with an Output that go test checks", readme, i+1, first)
			}
		}
	}
}
