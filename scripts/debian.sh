# Sourced: what differs between the Debian releases the project builds on.
#   debian_codename   bookworm (12), trixie (13); empty where /etc/os-release says none
#   debian_clang      the clang of that release whose sanitizers and libFuzzer the
#                     sanitizer builds use (clang-$debian_clang, clang++-$debian_clang)
debian_codename=$( (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true)
case $debian_codename in
  bookworm | "") debian_clang=14 ;;
  trixie) debian_clang=19 ;;
  *) debian_clang=19 ;;
esac
