# tests/e2e/lib.sh: helpers for the terminal-UI end-to-end tests (sourced).
# Drives the real binary in tmux on a private socket at a fixed size; waits
# for expected text with a deadline (capture-pane every 0.2 s), never with
# bare sleeps; always kills its tmux server and work directory at exit.
# Set TT_SCREENS_DIR to keep screen captures (text) there.

TT=${1:?usage: $0 path/to/tunetop}
TT=$(cd "$(dirname "$TT")" && pwd)/$(basename "$TT")
SOCK=tt$$
WORK=$(mktemp -d /tmp/tt_e2e.XXXXXX)
SCREEN=$WORK/screen.txt

tm() { tmux -L "$SOCK" -f /dev/null "$@"; }

cleanup() {
    tm kill-server >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    if [ -f "$SCREEN" ]; then
        echo "---- last screen ----" >&2
        cat "$SCREEN" >&2
    fi
    exit 1
}

# start COLS ROWS COMMAND...: a detached session running COMMAND in $WORK;
# the shell stays after the command ends (it sleeps) so that the exit code
# and the restored terminal can be checked. A previous "main" is replaced.
start() {
    local cols=$1 rows=$2
    shift 2
    # a placeholder session keeps the server up between runs: killing the
    # last session ends the server, and a new one started right then races
    # with its shutdown
    tm has-session -t hold 2>/dev/null || tm new-session -d -s hold -x 20 -y 5 "exec sleep 3600" ||
        fail "cannot start tmux"
    tm kill-session -t main 2>/dev/null
    tm new-session -d -x "$cols" -y "$rows" -s main -c "$WORK" \
        "env LANG=C.UTF-8 TERM=screen-256color $*; echo \"EXIT=\$?\"; exec sleep 3600" ||
        fail "cannot start tmux"
    tm set-option -t main status off >/dev/null
}

capture() { tm capture-pane -p -t main >"$SCREEN" 2>/dev/null; }

# exited: the program in the pane has ended (the shell printed EXIT=N); the
# screen will not change any more, so a wait for anything else is over
exited() { grep -qE 'EXIT=[0-9]+' "$SCREEN"; }

# wait_for REGEX SECONDS: until the screen matches (grep -E)
wait_for() {
    local re=$1 secs=${2:-30}
    local deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
    while :; do
        capture
        grep -qE -- "$re" "$SCREEN" && return 0
        exited && fail "tunetop ended ($(grep -oE 'EXIT=[0-9]+' "$SCREEN")) with no '$re' on screen"
        [ $(($(date +%s%N) / 1000000)) -gt $deadline ] && fail "no '$re' on screen after ${secs}s"
        sleep 0.2
    done
}

# wait_until SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds (it may read $SCREEN)
wait_until() {
    local secs=$1 what=$2
    shift 2
    local deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
    while :; do
        capture
        "$@" && return 0
        exited && fail "tunetop ended ($(grep -oE 'EXIT=[0-9]+' "$SCREEN")) before: $what"
        [ $(($(date +%s%N) / 1000000)) -gt $deadline ] && fail "timed out after ${secs}s: $what"
        sleep 0.2
    done
}

# wait_exit CODE SECONDS: until the program ends, which must be with exactly CODE
# (a crash, 134 or 139, is not an exit)
wait_exit() {
    local code=$1 secs=${2:-30}
    local deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
    while :; do
        capture
        if exited; then
            [ "$(grep -oE 'EXIT=[0-9]+' "$SCREEN" | tail -n 1)" = "EXIT=$code" ] ||
                fail "tunetop exited with $(grep -oE 'EXIT=[0-9]+' "$SCREEN") (want EXIT=$code)"
            return 0
        fi
        [ $(($(date +%s%N) / 1000000)) -gt $deadline ] && fail "tunetop still running after ${secs}s (want EXIT=$code)"
        sleep 0.2
    done
}

keys() { tm send-keys -t main "$@"; }

resize() { tm resize-window -t main -x "$1" -y "$2"; }

# mouse BUTTON COL ROW: an X10 mouse report, as a terminal sends it (0-based
# cell; BUTTON 0 left press, 3 release, 64 wheel up, 65 wheel down)
mouse() {
    local cb cx cy
    printf -v cb '\\x%02x' $((32 + $1))
    printf -v cx '\\x%02x' $((33 + $2))
    printf -v cy '\\x%02x' $((33 + $3))
    tm send-keys -t main -l "$(printf "\e[M$cb$cx$cy")"
}

# row_of REGEX: the 0-based screen row of the first line matching REGEX
row_of() { capture; grep -nE -- "$1" "$SCREEN" | head -1 | cut -d: -f1 | awk '{ print $1 - 1 }'; }

# save NAME: keep the current screen as $TT_SCREENS_DIR/NAME.txt
save() {
    capture
    [ -n "${TT_SCREENS_DIR:-}" ] && mkdir -p "$TT_SCREENS_DIR" && cp "$SCREEN" "$TT_SCREENS_DIR/$1.txt"
    return 0
}

# field ID NAME: a column of task ID's table row on the current screen.
# NAME: trials (the a of Progress a/b) or state. Rows are parsed from the
# right, since task labels contain spaces; Best is "-" or "<number> <unit>".
field() {
    awk -v id="$1" -v what="$2" '
        /Progress/ && /Best/ { cur = ($0 ~ /CurGF/) ? 1 : 0 }
        /^[ >*] +[0-9]+ / {
            line = $0; sub(/^[ >*] +/, "", line); split(line, f, " ");
            if (f[1] != id) next;
            n = split(line, f, " ");
            # from the end: Pri, State ("at roof" is two words), Err, [CurGF], Roof%, BestGF, Best ("-" or "1.2 us")
            s = (f[n - 1] == "roof" && f[n - 2] == "at") ? 1 : 0;
            state = s ? "at roof" : f[n - 1];
            k = n - 5 - s - cur;
            k = (f[k] == "-") ? k - 1 : k - 2;
            prog = f[k]; sub(/\/.*/, "", prog);
            if (what == "state") print state; else print prog;
            exit
        }' "$SCREEN"
}

# label ID: the Task column of task ID's row (as shown, possibly shortened)
label() {
    awk -v id="$1" '
        /^[ >*] +[0-9]+ / {
            line = $0; sub(/^[ >*] +/, "", line);
            n = split(line, f, " ");
            if (f[1] != id) next;
            sub(/^[0-9]+ +/, "", line);
            print substr(line, 1, index(line, "  ") - 1);
            exit
        }' "$SCREEN"
}

# The terminal is restored: the program left the alternate screen and the
# cursor is visible again.
check_restored() {
    local alt cur
    alt=$(tm display-message -p -t main '#{alternate_on}')
    cur=$(tm display-message -p -t main '#{cursor_flag}')
    [ "$alt" = 0 ] || fail "still on the alternate screen after exit"
    [ "$cur" = 1 ] || fail "cursor still hidden after exit"
}
