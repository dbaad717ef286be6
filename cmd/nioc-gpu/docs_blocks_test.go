package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// markdownBlocks returns the code blocks of a Markdown text, fenced and indented, and its
// prose: the text with the blocks' lines blanked, so that line numbers stay. An indented block
// begins after a blank line.
func markdownBlocks(text string) (blocks []docBlock, prose string) {
	var cur *docBlock
	var fence string
	var rest strings.Builder
	lines := strings.Split(text, "\n")
	prevBlank := true
	for i, line := range lines {
		n, trimmed := i+1, strings.TrimSpace(line)
		inBlock := true
		switch {
		case cur != nil && !cur.indented:
			if trimmed == fence {
				blocks = append(blocks, *cur)
				cur = nil
			} else {
				cur.text += line + "\n"
			}
		case strings.HasPrefix(strings.TrimLeft(line, " "), "```") && len(line)-len(strings.TrimLeft(line, " ")) < 4:
			if cur != nil {
				blocks = append(blocks, *cur)
			}
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			cur = &docBlock{line: n, info: strings.TrimSpace(trimmed[len(fence):])}
		case cur != nil && cur.indented && (strings.HasPrefix(line, "    ") || trimmed == ""):
			cur.text += strings.TrimPrefix(line, "    ") + "\n"
		case strings.HasPrefix(line, "    ") && prevBlank && trimmed != "":
			cur = &docBlock{line: n, indented: true, text: line[4:] + "\n"}
		default:
			if cur != nil {
				blocks = append(blocks, *cur)
				cur = nil
			}
			inBlock = false
		}
		if inBlock {
			rest.WriteString("\n")
		} else {
			rest.WriteString(line + "\n")
		}
		prevBlank = trimmed == ""
	}
	if cur != nil {
		blocks = append(blocks, *cur)
	}
	return blocks, rest.String()
}

// runnableBlocks returns the blocks of a document that the test runs: its ```sh blocks, and
// its plain fenced blocks that show a session (lines `$ command`), as the script of their
// commands.
func runnableBlocks(blocks []docBlock) []docBlock {
	var out []docBlock
	for _, b := range blocks {
		switch {
		case b.indented:
		case b.info == "sh":
			out = append(out, b)
		case b.info == "":
			if script := transcriptScript(b.text); script != "" {
				out = append(out, docBlock{line: b.line, text: script})
			}
		}
	}
	return out
}

// isSessionLine reports whether a line of a block is a command of a session shown in a plain
// fence, which runnableBlocks runs.
func isSessionLine(b docBlock, line string) bool {
	return !b.indented && b.info == "" && strings.HasPrefix(line, "$ ")
}

// transcriptScript returns the commands of a session's lines `$ command`, "" if it has none.
func transcriptScript(text string) string {
	var script strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			script.WriteString(cmd + "\n")
		}
	}
	return script.String()
}

// blockCommands returns a script's commands, each with its continuation lines (a line ending
// in \) joined: its lines that are neither blank nor comments nor continuations nor the body
// of a here-document.
func blockCommands(text string) []string {
	var out []string
	continued, heredoc := false, ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case heredoc != "":
			if trimmed == heredoc {
				heredoc = ""
			}
			continue
		case continued:
			out[len(out)-1] = strings.TrimSpace(strings.TrimSuffix(out[len(out)-1], `\`)) + " " + trimmed
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		default:
			out = append(out, trimmed)
		}
		continued = strings.HasSuffix(trimmed, `\`)
		if m := regexp.MustCompile(`<<-?\s*'?"?(\w+)`).FindStringSubmatch(trimmed); m != nil {
			heredoc = m[1]
		}
	}
	return out
}

// skipReason returns why a block is not run, "" when it is run; a block mixing commands to
// skip with others is an error.
func skipReason(b docBlock, used map[string]bool) (string, error) {
	var reasons []string
	skipped := 0
	cmds := blockCommands(b.text)
	for _, c := range cmds {
		for _, s := range docSkips {
			if strings.HasPrefix(c, s.prefix) {
				skipped++
				used[s.prefix] = true
				reasons = append(reasons, fmt.Sprintf("%s: %s", s.prefix, s.reason))
				break
			}
		}
	}
	switch {
	case skipped == 0:
		return "", nil
	case skipped < len(cmds):
		return "", fmt.Errorf("the block at line %d mixes commands the test skips with others: put them in blocks of their own", b.line)
	}
	return strings.Join(reasons, "; "), nil
}

// missingTool returns the program a block needs (docNeeds) that is not on the PATH, "" if
// none.
func missingTool(b docBlock) string {
	cmds := blockCommands(b.text)
	for _, n := range docNeeds {
		all := len(cmds) > 0
		for _, c := range cmds {
			all = all && strings.HasPrefix(c, n.prefix)
		}
		if _, err := exec.LookPath(n.tool); all && err != nil {
			return n.tool
		}
	}
	return ""
}
