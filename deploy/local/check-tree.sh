#!/usr/bin/env bash
# check-tree.sh: the repository holds source, not output. Fails, naming each
# file, when a tracked file is a compiled executable (ELF, Mach-O, PE, wasm)
# or larger than 1 MB. `make test` (and so CI) runs it first, so a binary
# committed by mistake (say, `go build` run inside a service folder) is
# caught on the change that adds it, not discovered by whoever clones next.
#
# Exceptions: the ALLOW list below is the one place to name a file that may
# break these rules, with the reason beside it. It is empty on purpose.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

MAX_BYTES=$((1024 * 1024))
ALLOW=(
	# "path/in/repo"  # why it must be committed
)
export MAX_BYTES
ALLOW_LIST=$(printf '%s\n' "${ALLOW[@]+"${ALLOW[@]}"}")
export ALLOW_LIST

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "check-tree: not a git work tree, nothing to check" >&2
	exit 0
fi

# One perl process reads every tracked file's size and first bytes (perl is
# part of every Debian base system; a process per file took seconds). It
# prints "path: reason" for each file that breaks a rule. Magic numbers
# rather than file(1), which a fresh machine may not have.
mapfile -t bad < <(git ls-files -z --cached | perl -0 -ne '
	BEGIN { %allow = map { $_ => 1 } split /\n/, $ENV{ALLOW_LIST}; $max = $ENV{MAX_BYTES} }
	chomp; $f = $_;
	next if $allow{$f} || !-f $f;  # deleted in the work tree: not committed
	$size = -s _;
	@why = $size > $max ? ("$size bytes, over the 1 MB limit") : ();
	open(my $fh, "<:raw", $f) or next;
	read($fh, $head, 64); $m = unpack("H8", $head);
	if ($m eq "7f454c46") { $k = "an ELF executable" }
	elsif ($m =~ /^(feedface|feedfacf|cefaedfe|cffaedfe)$/) { $k = "a Mach-O executable" }
	elsif ($m eq "0061736d") { $k = "a WebAssembly module" }
	elsif ($m =~ /^4d5a/ && length($head) == 64) {
		# "MZ" alone could start a text file: a PE image also has
		# "PE\0\0" where the little-endian offset at 0x3c points.
		$off = unpack("V", substr($head, 60, 4));
		$k = "a Windows (PE) executable" if seek($fh, $off, 0) && read($fh, $pe, 4) == 4 && $pe eq "PE\0\0";
	}
	push @why, $k if $k; $k = "";
	print "$f: ", join(", ", @why), "\n" if @why;
	close($fh);
')

if [ ${#bad[@]} -gt 0 ]; then
	echo "check-tree: tracked files that are build output or too large:" >&2
	printf '  %s\n' "${bad[@]}" >&2
	echo "Remove them (git rm --cached <file>), keep build output under .bin/," >&2
	echo "or, if one truly belongs in git, list it in ALLOW in deploy/local/check-tree.sh with the reason." >&2
	exit 1
fi
