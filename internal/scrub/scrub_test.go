package scrub

import "testing"

// The shapes in which Go's net/http and net packages, and the runtime, name the
// addresses and files of the host: none of them is left, what happened stays.
func TestHostDetails(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`do embedding request: Post "http://127.0.0.1:33059/embedding": EOF`, `do embedding request: Post "[address]": EOF`},
		{`Post "http://127.0.0.1:44839/completion": dial tcp 127.0.0.1:44839: connect: connection refused`,
			`Post "[address]": dial tcp [address]: connect: connection refused`},
		{`dial tcp 127.0.0.1:1234: connect: connection refused`, `dial tcp [address]: connect: connection refused`},
		{`read tcp 127.0.0.1:5->127.0.0.1:6: read: connection reset by peer`, `read tcp [address]: read: connection reset by peer`},
		{`write tcp 127.0.0.1:56600->127.0.0.1:44839: write: broken pipe`, `write tcp [address]: write: broken pipe`},
		{`dial tcp [::1]:11434: connect: connection refused`, `dial tcp [address]: connect: connection refused`},
		{`read tcp [::1]:50312->[::1]:11434: read: connection reset by peer`, `read tcp [address]: read: connection reset by peer`},
		{`Get "http://[fe80::1%25eth0]:8080/api/tags": context deadline exceeded`, `Get "[address]": context deadline exceeded`},
		{`no route to [fe80::1%eth0]:80 now`, `no route to [address] now`},
		{`listening on ::1 and 2001:db8::7 only`, `listening on [address] and [address] only`},
		{`peer 2001:0db8:0000:0000:0000:ff00:0042:8329 left`, `peer [address] left`},
		{`dial unix /run/user/1000/ollama.sock: connect: no such file or directory`, `dial unix [address]: connect: no such file or directory`},
		{`dial unix @hearth-runner: connect: connection refused`, `dial unix [address]: connect: connection refused`},
		{`connect to unix:/var/run/ollama.sock failed`, `connect to unix:[address] failed`},
		{`Post "http://unix/api/embed": dial unix /tmp/o.sock: connect: connection refused`, `Post "[address]": dial unix [address]: connect: connection refused`},
		{`dial tcp: lookup runner.internal on 127.0.0.53:53: no such host`, `dial tcp: lookup [address] on [address]: no such host`},
		{`Post "https://gpu-box.lan:11434/api/embed": EOF`, `Post "[address]": EOF`},
		{`server at localhost:11434 refused`, `server at [address] refused`},
		{`gpu-box.lan:11434 timed out`, `[address] timed out`},
		{`unable to load model: /home/alice/.ollama/models/blobs/sha256-8bfd2b70`, `unable to load model: sha256-8bfd2b70`},
		{`open C:\Users\bob\.ollama\models\blobs\sha256-1: access denied`, `open sha256-1: access denied`},
		// What is not an address stays.
		{`GGML_ASSERT failed at ggml.c:1234`, `GGML_ASSERT failed at ggml.c:1234`},
		{`llama runner process has terminated: exit status 2`, `llama runner process has terminated: exit status 2`},
		{`a tcp connection closed at 12:30:45`, `a tcp connection closed at 12:30:45`},
		{`std::runtime_error: bad alloc`, `std::runtime_error: bad alloc`},
		{`relative/dir/file and a/b stay`, `relative/dir/file and a/b stay`},
	} {
		if got := HostDetails(c.in); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
