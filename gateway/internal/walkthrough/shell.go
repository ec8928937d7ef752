package walkthrough

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Shell is one bash session that runs commands one at a time, as a reader
// pastes them into a terminal: variables, the working folder and jobs
// started with & carry over from one command to the next.
type Shell struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	dir string
	n   int
}

// StartShell starts bash in dir with env. Its output of each command goes
// to files under dir/.walkthrough.
func StartShell(dir string, env []string) (*Shell, error) {
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.Env = env
	// Its own process group: Close ends bash and every job it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := os.MkdirAll(filepath.Join(dir, ".walkthrough"), 0o755); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Shell{cmd: cmd, in: in, out: bufio.NewReader(out), dir: dir}, nil
}

// Result is what a command printed and its exit status.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs one command (several lines allowed) and waits for it. Its
// standard input is /dev/null, so it cannot eat the session's commands.
func (s *Shell) Run(command string) (Result, error) {
	s.n++
	base := filepath.Join(s.dir, ".walkthrough", strconv.Itoa(s.n))
	script := fmt.Sprintf("{\n%s\n} >%s 2>%s </dev/null\nprintf '\\n@@rc %%d\\n' $?\n", command, shq(base+".out"), shq(base+".err"))
	if _, err := io.WriteString(s.in, script); err != nil {
		return Result{}, fmt.Errorf("write to bash: %w", err)
	}
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			return Result{}, fmt.Errorf("bash ended: %w", err)
		}
		if rest, ok := strings.CutPrefix(line, "@@rc "); ok {
			code, _ := strconv.Atoi(strings.TrimSpace(rest))
			o, _ := os.ReadFile(base + ".out")
			e, _ := os.ReadFile(base + ".err")
			return Result{Stdout: string(o), Stderr: string(e), Code: code}, nil
		}
	}
}

// Set gives a shell variable a value.
func (s *Shell) Set(name, value string) error {
	r, err := s.Run(name + "=" + shq(value))
	if err == nil && r.Code != 0 {
		err = fmt.Errorf("set %s: %s", name, r.Stderr)
	}
	return err
}

// Close ends the session and every process it started (SIGTERM, then
// SIGKILL for what is left after a grace period).
func (s *Shell) Close() {
	_ = s.in.Close()
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	// Jobs outlive bash: end what is left of the group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
}

// shq quotes s for bash.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
