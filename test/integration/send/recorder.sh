#!/bin/sh
# Behaves like sendmail and logs like Postfix's cleanup: stores each message under the directory
# named in recorder-dir beside it, then appends "message-id=<id>" to <dir>/maillog (what the send
# job searches after a crash). "refuse" in an address → 67, "tempfail" → 75; "stall" → sleeps before
# reading the message, "hang" → sleeps after reading it (both for the time limit), "slow" → answers
# after 2 s (the shutdown drain).
dir=$(cat "$(dirname "$0")/recorder-dir")
for a in "$@"; do
  case "$a" in
    *stall*) sleep 30 2>/dev/null ;;
  esac
done
n=$(date +%s%N)-$$
printf '%s\n' "$@" > "$dir/$n.args.tmp"
cat > "$dir/$n.eml.tmp"
for a in "$@"; do
  case "$a" in
    *tempfail*) echo "451 try later" >&2; rm -f "$dir/$n.args.tmp" "$dir/$n.eml.tmp"; exit 75 ;;
    *refuse*) echo "550 no such user: $a" >&2; rm -f "$dir/$n.args.tmp" "$dir/$n.eml.tmp"; exit 67 ;;
    *hang*) sleep 30 2>/dev/null ;;
    *slow*) sleep 2 2>/dev/null ;;
  esac
done
mv "$dir/$n.eml.tmp" "$dir/$n.eml"
mv "$dir/$n.args.tmp" "$dir/$n.args"
id=$(grep -i -m1 '^Message-ID:' "$dir/$n.eml" | sed 's/^[^:]*:[[:space:]]*//' | tr -d '\r')
echo "recorder: $n: message-id=$id" >> "$dir/maillog"
exit 0
