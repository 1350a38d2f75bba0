# shellcheck shell=bash
# The one sshd_config of this repository's sshds: each node's of the local cluster
# (tools/kube/cluster.sh, tools/kube/node.sh), the demo's and the bench scripts' (scripts/lib.sh)
# and each acceptance test's (internal/acctest/sshd.go runs this function). Sourced, not run.

# sshd_config LISTEN PIDFILE AUTHORIZED_KEYS HOSTKEY... prints an sshd_config on stdout: sshd on
# LISTEN (address:port), root logins by key only, no PAM. The caller may append lines of its own
# (a Match block must come last). Environment:
#   SSHD_PASSWORD_AUTHENTICATION  yes lets users log in with a password (default no)
#   SSHD_SETENV                   the variables of sshd's SetEnv line (default SHLVL=1; empty: none);
#                                 sshd honours only the first SetEnv line, so callers add theirs here
#
# SHLVL=1: bash, root's shell, skips ~/.bashrc for a command sshd runs when SHLVL says it is not the
# top level. This machine's ~/.bashrc runs pyenv's rehash, whose lock a session killed meanwhile (a
# fault test cuts them) leaves behind, after which every command waited 60 s for it.
# StrictModes no: the keys live in the checkout or a test's directory, wherever that is; under /tmp
# (mode 1777) StrictModes refuses them.
sshd_config() {
	local listen=$1 pidfile=$2 authorized_keys=$3 key
	shift 3
	echo "ListenAddress $listen"
	for key; do
		echo "HostKey $key"
	done
	cat <<EOF
PidFile $pidfile
AuthorizedKeysFile $authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication ${SSHD_PASSWORD_AUTHENTICATION:-no}
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PrintMotd no
LogLevel VERBOSE
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
	local env=${SSHD_SETENV-SHLVL=1}
	if [[ -n $env ]]; then
		echo "SetEnv $env"
	fi
}
