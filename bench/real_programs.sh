#!/usr/bin/env bash
# Real C programs as linked LLVM bitcode, for benchmarking `sluice analyze` beyond the examples.
#
#   bench/real_programs.sh prepare [NAME...]   fetch Debian sources, compile, link; one line per
#                                              program: name, .bc, files compiled/skipped, size
#   bench/real_programs.sh list                the programs and their .bc (after prepare)
#   bench/real_programs.sh run [NAME...]       prepare, build Sluice, then measure `sluice analyze`
#                                              on each (both analyses; resident in-process,
#                                              reference, resident through sluiced): results.tsv
#                                              and a Markdown table (see "Measuring" below)
#   bench/real_programs.sh report              the table of the last run again
#
# Every source comes from a Debian 12 package, through apt only:
#   binutils-source  (installed; ships the upstream binutils tarball in /usr/src/binutils):
#       chew         bfd/doc/chew.c, the doc generator (one file)                       ~3k
#       cp-demangle  libiberty's C++ demangler with its own main() (a stdin filter like
#                    c++filt) + what it uses of libiberty                              ~30k
#       minigzip     zlib/minigzip.c + the zlib copy in binutils                       ~21k
#       size         binutils' size: binutils + bfd + libiberty + libsframe + zlib    ~300k
#       objdump      binutils' objdump: the same + opcodes (the x86 disassembler)     ~420k
#       cxxfilt      binutils' c++filt, only when named (bfd again, so as big as size)
#     All but chew use one configure run of binutils (native x86-64 targets only, ~1 min),
#     for its generated headers and the exact compile flags of each file.
#   lua5.4 (`apt-get source`, from deb-src entries derived from this machine's apt sources into a
#     private apt state under the cache; the system's apt configuration is not touched):
#       lua          the Lua 5.4 interpreter (lua.c + its core and standard libraries)  ~74k
#
# Each source file is compiled with `clang-14 -O0 -g -emit-llvm -c` and the flags its own build
# would use (taken from `make -n` of the configured tree); each program is linked with
# llvm-link-14: its own objects whole, then its libraries with --only-needed, in the order the
# real link uses, so a program holds what its objects reach by reference (a library's functions
# that nothing uses stay out: a little finer than a static link, which takes whole archive
# members). A file that fails to compile is skipped and counted; its log is kept.
#
# Environment:
#   SLUICE_REAL_PROGRAMS_CACHE  where everything goes (default ~/.cache/sluice-real-programs)
#   SLUICE_REAL_PROGRAMS_JOBS   parallel compiles (default: the number of cores)
#   SLUICE_REAL_PROGRAMS_TIMEOUT  seconds one `sluice analyze` may take (default 1800)
#
# Work already done (extraction, configure, each compile, each link, each count) is kept in the
# cache and skipped; remove the cache directory to start over.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"

CACHE="${SLUICE_REAL_PROGRAMS_CACHE:-$HOME/.cache/sluice-real-programs}"
NJOBS="${SLUICE_REAL_PROGRAMS_JOBS:-$(jobs)}"
CLANG=clang-14
LLVM_LINK=llvm-link-14
LLVM_DIS=llvm-dis-14

SRC="$CACHE/src"      # extracted sources
WORK="$CACHE/build"   # configure trees, captured compile commands
BC="$CACHE/bc"        # one .bc per compiled file: bc/COMPONENT/STEM.bc (or STEM.failed, a log)
LIB="$CACHE/lib"      # one linked .bc per library component
OUT="$CACHE/programs" # NAME.bc (the benchmark inputs), NAME.spec, NAME.stats
LOGS="$CACHE/logs"

# Every program, in the order they are prepared and reported.
PROGRAMS=(chew cp-demangle minigzip lua size objdump)
# Also known, not prepared unless named: cxxfilt (binutils' c++filt, as large as size: bfd).
EXTRA_PROGRAMS=(cxxfilt)

# Debian packages needed to prepare (installed when missing).
REAL_PROGRAMS_PACKAGES=(binutils-source clang-14 llvm-14 make xz-utils dpkg-dev jq time)

# The binutils libraries, in the order a link lists them (a library before what it uses), the
# make target of each and the libraries each one needs (from the Makefiles' LIBADD).
BINUTILS_LIBS=(opcodes bfd libsframe libiberty zlib)
declare -A LIB_TARGET=([opcodes]=libopcodes.la [bfd]=libbfd.la [libsframe]=libsframe.la
  [libiberty]=libiberty.a [zlib]=libz.a)
declare -A LIB_NEEDS=([opcodes]="bfd libiberty" [bfd]="libsframe libiberty zlib"
  [libsframe]="" [libiberty]="" [zlib]="")
BINUTILS_TOOLS=(cxxfilt size objdump)

# A make -n compile command is recognised by this stand-in for the compiler.
MARK=SLUICE_REAL_PROGRAMS_CC

die() { printf 'real_programs.sh: %s\n' "$*" >&2; exit 1; }

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }

# ---------------------------------------------------------------------------------------------
# Compiling: a command file holds one line per source file, "COMPONENT<TAB>DIR<TAB>ARGS", ARGS
# being the compiler's arguments as a shell would read them in DIR (quotes and all).

# compile_one LINE: compile one command line to bc/COMPONENT/STEM.bc, unless done (or failed)
# before. Run by xargs in a child bash, so it must not rely on anything but exported variables.
compile_one() {
  local comp dir args
  IFS=$'\t' read -r comp dir args <<<"$1"
  cd "$dir" || return 1
  set +u # make -n leaves shell variables of the recipe ($depbase) in the arguments
  # shellcheck disable=SC2034 # used by the eval below
  local depbase=unused
  eval "set -- $args" || { echo "cannot parse: $args" >&2; return 1; }
  local flags=() out="" src=""
  while [ $# -gt 0 ]; do
    case "$1" in
      -o) out=$2; shift ;;
      -MT | -MF | -MQ) shift ;;
      -c | -MD | -MP | -MMD | -O? | -g | -g[0-9] | -pedantic | -W*) ;;
      *.c) src=$1 ;;
      *) flags+=("$1") ;;
    esac
    shift
  done
  [ -n "$src" ] || { echo "no source file in: $args" >&2; return 1; }
  [ -n "$out" ] || out=$(basename "${src%.c}").o
  local stem
  stem=$(basename "${out%.*}")
  local dest="$RP_BC/$comp/$stem"
  [ -f "$dest.bc" ] || [ -f "$dest.failed" ] && return 0
  if "$RP_CLANG" "${flags[@]}" -O0 -g -w -emit-llvm -c "$src" -o "$dest.bc.tmp" 2>"$dest.log"; then
    mv "$dest.bc.tmp" "$dest.bc"
    rm -f "$dest.log"
  else
    rm -f "$dest.bc.tmp"
    { echo "# cd $dir && $RP_CLANG ${flags[*]} -O0 -g -w -emit-llvm -c $src"; cat "$dest.log"; } >"$dest.failed"
    rm -f "$dest.log"
  fi
}

# compile_all CMDFILE...: compile every line of the command files, NJOBS at a time.
compile_all() {
  local f comp
  for f in "$@"; do
    while IFS=$'\t' read -r comp _; do mkdir -p "$BC/$comp"; done <"$f"
  done
  export RP_BC="$BC" RP_CLANG="$CLANG"
  export -f compile_one
  cat "$@" | xargs -d '\n' -P "$NJOBS" -n 1 bash -c 'compile_one "$1"' _
}

# capture_make COMPONENT DIR TARGET...: the compile commands `make TARGET...` would run in DIR
# (configured tree), as command-file lines. Generated sources that make would create are made.
capture_make() {
  local comp=$1 dir=$2
  shift 2
  # -k: a program's link needs libraries this tree has no rule for; its compiles still show.
  (cd "$dir" && make -n -k V=1 CC="$MARK" "$@" 2>/dev/null || true) |
    sed -n -e "s/^.*--mode=compile $MARK //p" -e "s/^$MARK //p" |
    sed -e 's/[[:space:]]*&&[[:space:]]*\\$//' -e 's/[[:space:]]*\\$//' |
    awk -v c="$comp" -v d="$dir" '!seen[$0]++ { print c "\t" d "\t" $0 }'
}

# make_var DIR VAR: a variable of the Makefile in DIR, expanded.
make_var() {
  make -s --no-print-directory -C "$1" -f Makefile -f - "print-$2" <<'EOF'
print-%:
	@echo '$($*)'
EOF
}

# components_of SPEC: the components whose .bc files go into a program (own objects and libs).
spec_components() { awk '{print $2}' "$1" | sort -u; }

# ---------------------------------------------------------------------------------------------
# Sources.

binutils_tarball() {
  local t
  t=$(ls /usr/src/binutils/binutils-*.tar.* 2>/dev/null | head -1)
  [ -n "$t" ] || die "binutils-source is installed but /usr/src/binutils has no tarball"
  echo "$t"
}

# binutils_src: extract binutils (once); prints the source directory.
binutils_src() {
  local tarball name
  tarball=$(binutils_tarball)
  name=$(basename "$tarball")
  name=${name%.tar.*}
  if [ ! -f "$SRC/$name/.extracted" ]; then
    log "extracting $tarball"
    mkdir -p "$SRC"
    rm -rf "${SRC:?}/$name"
    # Without the parts never built here (gas, ld, gold, gprofng: 230 of its 330 MB).
    tar -xf "$tarball" -C "$SRC" --exclude="$name/gas" --exclude="$name/ld" --exclude="$name/gold" \
      --exclude="$name/gprofng"
    touch "$SRC/$name/.extracted"
  fi
  echo "$SRC/$name"
}

# binutils_configured: configure binutils once (bfd, opcodes, libiberty, libsframe, zlib and
# binutils only), make bfd's generated headers; prints the build directory.
binutils_configured() {
  local src build
  src=$(binutils_src)
  build="$WORK/$(basename "$src")"
  if [ ! -f "$build/.configured" ]; then
    log "configuring $(basename "$src") in $build (about a minute; log: $LOGS/binutils-configure.log)"
    rm -rf "$build"
    mkdir -p "$build" "$LOGS"
    local start=$SECONDS
    (
      cd "$build"
      CC=$CLANG CFLAGS="-O0 -g" "$src/configure" --disable-gas --disable-ld --disable-gold \
        --disable-gprof --disable-gprofng --disable-gdb --disable-gdbserver --disable-sim \
        --disable-libctf --disable-nls --disable-werror --without-zstd --without-debuginfod \
        --without-system-zlib
      make -j1 configure-libiberty configure-bfd configure-opcodes configure-binutils \
        configure-libsframe configure-zlib
      # bfd.h and the other generated headers every part includes.
      # shellcheck disable=SC2046
      make -C bfd bfd.h $(make_var bfd BUILD_HFILES)
    ) >"$LOGS/binutils-configure.log" 2>&1 || die "configuring binutils failed; see $LOGS/binutils-configure.log"
    touch "$build/.configured"
    log "configured binutils in $((SECONDS - start)) s"
  fi
  echo "$build"
}

# binutils_commands: capture (once) the compile commands of the libraries and the tools.
binutils_commands() {
  local build cmds="$WORK/commands"
  build=$(binutils_configured)
  mkdir -p "$cmds"
  local lib
  for lib in "${BINUTILS_LIBS[@]}"; do
    [ -s "$cmds/$lib.cmds" ] && continue
    capture_make "$lib" "$build/$lib" "${LIB_TARGET[$lib]}" >"$cmds/$lib.cmds.tmp"
    [ -s "$cmds/$lib.cmds.tmp" ] || die "make -n found no compile commands for $lib in $build/$lib"
    # Sources generated by the build itself (bfd's peigen.c and the like) are made now.
    local src
    for src in $(awk -F'\t' '{n = split($3, a, " "); print a[n]}' "$cmds/$lib.cmds.tmp"); do
      [[ "$src" =~ ^[A-Za-z0-9_./+-]+\.c$ ]] || continue # zlib's `test -f ...` forms exist anyway
      [ -e "$build/$lib/$src" ] || make -C "$build/$lib" "$src" >>"$LOGS/binutils-configure.log" 2>&1 ||
        die "cannot generate $lib/$src; see $LOGS/binutils-configure.log"
    done
    mv "$cmds/$lib.cmds.tmp" "$cmds/$lib.cmds"
  done
  if [ ! -s "$cmds/binutils.cmds" ]; then
    capture_make binutils "$build/binutils" "${BINUTILS_TOOLS[@]}" >"$cmds/binutils.cmds.tmp"
    [ -s "$cmds/binutils.cmds.tmp" ] || die "make -n found no compile commands in $build/binutils"
    mv "$cmds/binutils.cmds.tmp" "$cmds/binutils.cmds"
  fi
}

# binutils_tool_spec TOOL: TOOL's objects (from TOOL_OBJECTS and TOOL_LDADD) and libraries.
binutils_tool_spec() {
  local tool=$1 build var o
  build=$(binutils_configured)
  var=${tool//-/_}
  for o in $(make_var "$build/binutils" "${var}_OBJECTS") $(make_var "$build/binutils" "${var}_LDADD"); do
    case "$o" in
      *.o) echo "obj binutils ${o%.o}" ;;
      */libbfd.la) echo "lib bfd" ;;
      */libopcodes.la) echo "lib opcodes" ;;
      */libiberty.a) echo "lib libiberty" ;;
      */libsframe.la) echo "lib libsframe" ;;
    esac
  done
}

# with_needed_libs: the spec on stdin, with the libraries its libraries need added, objects
# first and libraries in link order.
with_needed_libs() {
  local spec
  spec=$(cat)
  declare -A need=()
  local lib changed=1
  for lib in $(awk '$1 == "lib" {print $2}' <<<"$spec"); do need[$lib]=1; done
  while [ $changed = 1 ]; do
    changed=0
    for lib in "${!need[@]}"; do
      local dep
      for dep in ${LIB_NEEDS[$lib]}; do
        [ -n "${need[$dep]:-}" ] || { need[$dep]=1; changed=1; }
      done
    done
  done
  awk '$1 == "obj"' <<<"$spec" | awk '!seen[$0]++'
  for lib in "${BINUTILS_LIBS[@]}"; do
    [ -n "${need[$lib]:-}" ] && echo "lib $lib"
  done
  return 0
}

# deb_source PACKAGE: `apt-get source PACKAGE` (once) into src/, with deb-src entries made from
# this machine's own Debian apt sources, in a private apt state; prints the source directory.
deb_source() {
  local pkg=$1 apt="$CACHE/apt"
  local dir
  mkdir -p "$SRC"
  dir=$(find "$SRC" -maxdepth 1 -type d -name "$pkg-*" | head -1)
  if [ -n "$dir" ] && [ -f "$dir/.extracted" ]; then
    echo "$dir"
    return 0
  fi
  [ -z "$dir" ] || rm -rf "$dir" # a half-done extraction
  mkdir -p "$apt/lists/partial" "$apt/sources.list.d" "$apt/archives/partial" "$SRC" "$LOGS"
  local opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives")
  if [ ! -f "$apt/.updated" ]; then
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || die "cannot tell the Debian release from /etc/os-release"
    # One-line entries: deb [opts] URI SUITE COMPONENTS... of this release -> deb-src.
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk -v c="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ "^" c "(-|$)") { sub(/^deb/, "deb-src"); print; break } }' \
        >"$apt/sources.list"
    # deb822 stanzas whose suites are this release's -> Types: deb-src.
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      awk -v c="$codename" 'BEGIN { RS = ""; FS = "\n" }
        {
          keep = 0
          for (i = 1; i <= NF; i++)
            if ($i ~ /^Suites:/) {
              n = split($i, w, /[ \t]+/)
              for (j = 2; j <= n; j++) if (w[j] == c || index(w[j], c "-") == 1) keep = 1
            }
          if (!keep) next
          for (i = 1; i <= NF; i++) print (($i ~ /^Types:/) ? "Types: deb-src" : $i)
          print ""
        }' "$f" >"$apt/sources.list.d/$(basename "$f")"
    done
    [ -s "$apt/sources.list" ] || grep -q . "$apt"/sources.list.d/*.sources 2>/dev/null ||
      die "no Debian '$codename' entries in /etc/apt/sources.list* to make deb-src entries from"
    log "apt-get update for deb-src (private state in $apt)"
    apt-get "${opts[@]}" update >"$LOGS/apt-src-update.log" 2>&1 ||
      die "apt-get update for deb-src failed; see $LOGS/apt-src-update.log"
    touch "$apt/.updated"
  fi
  log "apt-get source $pkg"
  (cd "$SRC" && apt-get "${opts[@]}" source "$pkg") >"$LOGS/apt-source-$pkg.log" 2>&1 ||
    die "apt-get source $pkg failed; see $LOGS/apt-source-$pkg.log"
  dir=$(find "$SRC" -maxdepth 1 -type d -name "$pkg-*" | head -1)
  [ -n "$dir" ] || die "apt-get source $pkg left no $pkg-* directory in $SRC"
  # The version apt fetched, from the .dsc it left.
  local dsc
  dsc=$(ls "$SRC/${pkg}"_*.dsc | head -1)
  basename "$dsc" .dsc | sed "s/^${pkg}_//" >"$dir/.version"
  touch "$dir/.extracted"
  rm -rf "$apt/lists" "$apt/.updated" # 20 MB of index, fetched again (in a second) if needed
  echo "$dir"
}

# ---------------------------------------------------------------------------------------------
# Programs: each has a spec, programs/NAME.spec, lines "obj COMPONENT STEM" (linked whole) and
# "lib COMPONENT" (linked --only-needed after the objects, in order).

spec_chew() {
  local src cmds="$WORK/commands"
  src=$(binutils_src)
  mkdir -p "$cmds"
  printf 'chew\t%s\t%s\n' "$src/bfd/doc" "-I$src/include -c -o chew.o chew.c" >"$cmds/chew.cmds"
  echo "obj chew chew"
}

spec_minigzip() {
  binutils_commands
  local src cmds="$WORK/commands"
  src=$(binutils_src)
  # zlib's own flags (as binutils' zlib build has them), for its example program.
  local flags
  flags=$(awk -F'\t' 'NR == 1 {print $3}' "$cmds/zlib.cmds" | sed -e 's/ -c .*//' -e 's/ -o .*//')
  printf 'minigzip\t%s\t%s\n' "$src/zlib" "$flags -I$src/zlib -c -o minigzip.o minigzip.c" >"$cmds/minigzip.cmds"
  echo "obj minigzip minigzip"
  echo "lib zlib"
}

spec_cp_demangle() {
  binutils_commands
  local cmds="$WORK/commands" line
  # libiberty's own compile of cp-demangle.c, with the main() it has for this (a stdin filter
  # like c++filt), as another object.
  line=$(grep -m1 -E '[/[:space:]]cp-demangle\.c -o cp-demangle\.o$' "$cmds/libiberty.cmds") ||
    die "no compile command for libiberty/cp-demangle.c in $cmds/libiberty.cmds"
  line=${line/#libiberty$'\t'/cp-demangle$'\t'}
  printf '%s\n' "${line% -o cp-demangle.o} -DSTANDALONE_DEMANGLER -o cp-demangle.o" >"$cmds/cp-demangle.cmds"
  echo "obj cp-demangle cp-demangle"
  echo "lib libiberty"
}

spec_lua() {
  local src cmds="$WORK/commands"
  src=$(deb_source lua5.4)
  mkdir -p "$cmds"
  # Debian's luaconf.h includes a header that debian/rules writes before building.
  local multiarch="$src/src/lua5.4-deb-multiarch.h"
  if [ ! -f "$multiarch" ]; then
    printf '#ifndef _LUA_DEB_MULTIARCH_\n#define _LUA_DEB_MULTIARCH_\n#define DEB_HOST_MULTIARCH "%s"\n#endif\n' \
      "$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)" >"$multiarch"
  fi
  # src/Makefile's flags for the linux target (Debian builds linux-readline; readline's headers
  # are not needed without it): lua.o + CORE_O + LIB_O.
  local f objs=() o
  # shellcheck disable=SC2207 # make variables are lists of words
  objs=(lua $(make_var "$src/src" CORE_O) $(make_var "$src/src" LIB_O))
  : >"$cmds/lua.cmds"
  for o in "${objs[@]}"; do
    f=${o%.o}
    printf 'lua\t%s\t%s\n' "$src/src" "-std=gnu99 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c -o $f.o $f.c" >>"$cmds/lua.cmds"
    echo "obj lua $f"
  done
}

spec_binutils_tool() {
  binutils_commands
  binutils_tool_spec "$1" | with_needed_libs
}

# spec NAME: write programs/NAME.spec and the command files it needs; prints nothing.
write_spec() {
  local name=$1 spec
  mkdir -p "$OUT"
  case "$name" in
    chew) spec=$(spec_chew) ;;
    minigzip) spec=$(spec_minigzip) ;;
    cp-demangle) spec=$(spec_cp_demangle) ;;
    lua) spec=$(spec_lua) ;;
    cxxfilt | size | objdump) spec=$(spec_binutils_tool "$name") ;;
    *) die "unknown program '$name' (known: ${PROGRAMS[*]} ${EXTRA_PROGRAMS[*]})" ;;
  esac
  [ -n "$spec" ] || die "no objects for $name"
  printf '%s\n' "$spec" >"$OUT/$name.spec"
}

source_package_of() {
  case "$1" in
    lua) echo "lua5.4=$(cat "$(deb_source lua5.4)/.version")" ;;
    *) echo "binutils-source=$(pkg_version binutils-source)" ;;
  esac
}

# up_to_date OUT INPUT...: OUT exists, was made from exactly these inputs (OUT.inputs) and is
# newer than each of them.
up_to_date() {
  local out=$1 f
  shift
  [ -f "$out" ] && [ -f "$out.inputs" ] || return 1
  [ "$(printf '%s\n' "$@")" = "$(cat "$out.inputs")" ] || return 1
  for f in "$@"; do [ "$f" -nt "$out" ] && return 1; done
  return 0
}

# link_lib COMPONENT: lib/COMPONENT.bc from every compiled file of the component.
link_lib() {
  local comp=$1 out="$LIB/$1.bc"
  mkdir -p "$LIB"
  local files=("$BC/$comp"/*.bc)
  [ -e "${files[0]}" ] || { log "nothing of library $comp compiled"; return 1; }
  up_to_date "$out" "${files[@]}" && return 0
  "$LLVM_LINK" -o "$out.tmp" "${files[@]}" || { log "llvm-link failed for library $comp"; return 1; }
  mv "$out.tmp" "$out"
  printf '%s\n' "${files[@]}" >"$out.inputs"
}

# link_program NAME: programs/NAME.bc from its spec (again only when its inputs changed).
link_program() {
  local name=$1 spec="$OUT/$1.spec" out="$OUT/$1.bc"
  local objs=() libs=() kind comp stem
  while read -r kind comp stem; do
    case "$kind" in
      obj) [ -f "$BC/$comp/$stem.bc" ] && objs+=("$BC/$comp/$stem.bc") ;;
      lib) link_lib "$comp" || return 1; libs+=("$LIB/$comp.bc") ;;
    esac
  done <"$spec"
  [ ${#objs[@]} -gt 0 ] || { log "$name: none of its own files compiled"; return 1; }
  up_to_date "$out" "${objs[@]}" "${libs[@]}" && return 0
  rm -f "$out" "$out.inputs"
  "$LLVM_LINK" -o "$out.own.tmp" "${objs[@]}" || { log "llvm-link failed for $name's objects"; return 1; }
  if [ ${#libs[@]} -gt 0 ]; then
    "$LLVM_LINK" --only-needed -o "$out.tmp" "$out.own.tmp" "${libs[@]}" || { log "llvm-link failed for $name"; return 1; }
    rm -f "$out.own.tmp"
  else
    mv "$out.own.tmp" "$out.tmp"
  fi
  mv "$out.tmp" "$out"
  printf '%s\n' "${objs[@]}" "${libs[@]}" >"$out.inputs"
}

# file_counts NAME: "COMPILED SKIPPED" over the files that go into NAME (its objects and the
# whole of each of its libraries).
file_counts() {
  local spec="$OUT/$1.spec" compiled=0 skipped=0 kind comp stem
  while read -r kind comp stem; do
    case "$kind" in
      obj)
        [ -f "$BC/$comp/$stem.bc" ] && compiled=$((compiled + 1))
        [ -f "$BC/$comp/$stem.failed" ] && skipped=$((skipped + 1))
        ;;
      lib)
        compiled=$((compiled + $(find "$BC/$comp" -name '*.bc' | wc -l)))
        skipped=$((skipped + $(find "$BC/$comp" -name '*.failed' | wc -l)))
        ;;
    esac
  done <"$spec"
  echo "$compiled $skipped"
}

# ir_stats BC: "INSTRUCTIONS NON_DEBUG_INSTRUCTIONS DEFINED_FUNCTIONS DECLARED_FUNCTIONS",
# cached next to the program (llvm-dis of the large ones takes a while).
ir_stats() {
  local bc=$1 stats="${1%.bc}.stats"
  if [ ! -f "$stats" ] || [ "$bc" -nt "$stats" ]; then
    "$LLVM_DIS" -o - "$bc" | awk '
      /^define / { defined++; body = 1; next }
      /^declare / { if ($0 !~ /@llvm\./) declared++; next }
      body && /^}/ { body = 0; next }
      body && /^  [^ ]/ { n++; if ($0 ~ /call void @llvm\.dbg\./) dbg++ }
      END { printf "%d %d %d %d\n", n, n - dbg, defined, declared }' >"$stats.tmp"
    mv "$stats.tmp" "$stats"
  fi
  cat "$stats"
}

record_versions() {
  {
    echo "# sources and tools used by bench/real_programs.sh prepare ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
    echo "binutils-source $(pkg_version binutils-source) ($(basename "$(binutils_tarball)"))"
    local d
    for d in "$SRC"/lua5.4-*; do [ -f "$d/.version" ] && echo "lua5.4 $(cat "$d/.version") (apt-get source)"; done
    echo "clang-14 $(pkg_version clang-14)"
    echo "llvm-14 $(pkg_version llvm-14)"
  } >"$CACHE/VERSIONS"
}

# ---------------------------------------------------------------------------------------------

prepare() {
  local names=("$@")
  [ ${#names[@]} -gt 0 ] || names=("${PROGRAMS[@]}")
  ensure_packages "${REAL_PROGRAMS_PACKAGES[@]}"
  mkdir -p "$CACHE" "$LOGS"
  local start=$SECONDS name

  for name in "${names[@]}"; do write_spec "$name"; done

  # Everything the chosen programs need, compiled in one go.
  local cmdfiles=() comp
  for comp in $(for name in "${names[@]}"; do spec_components "$OUT/$name.spec"; done | sort -u); do
    [ -f "$WORK/commands/$comp.cmds" ] && cmdfiles+=("$WORK/commands/$comp.cmds")
  done
  local total already=0
  total=$(cat "${cmdfiles[@]}" | wc -l)
  for comp in $(cut -f1 "${cmdfiles[@]}" | sort -u); do
    [ -d "$BC/$comp" ] || continue
    already=$((already + $(find "$BC/$comp" \( -name '*.bc' -o -name '*.failed' \) | wc -l)))
  done
  log "compiling $((total - already)) of $total files to bitcode ($NJOBS jobs; $already done before)"
  compile_all "${cmdfiles[@]}"

  record_versions
  local failed=()
  for name in "${names[@]}"; do
    if ! link_program "$name"; then
      printf '%-12s NOT BUILT (see above; failed compiles: %s/COMPONENT/*.failed, removed to retry)\n' "$name" "$BC"
      rm -f "$OUT/$name.row"
      failed+=("$name")
      continue
    fi
    local counts stats pkg
    counts=$(file_counts "$name")
    stats=$(ir_stats "$OUT/$name.bc")
    pkg=$(source_package_of "$name")
    # shellcheck disable=SC2086
    set -- $counts $stats
    printf '%-12s %s  files: %d compiled, %d skipped  IR: %d instructions (%d without llvm.dbg), %d functions  [%s]\n' \
      "$name" "$OUT/$name.bc" "$1" "$2" "$3" "$4" "$5" "$pkg"
    printf '%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n' "$name" "$OUT/$name.bc" "$pkg" "$1" "$2" "$3" "$4" "$5" "$6" >"$OUT/$name.row"
    if [ "$2" -gt 0 ]; then
      log "$name: skipped files (logs): $(for c in $(spec_components "$OUT/$name.spec"); do ls "$BC/$c"/*.failed 2>/dev/null; done | tr '\n' ' ')"
    fi
  done
  # The summary: every program prepared so far, this time or before.
  {
    printf 'name\tbc\tpackage\tcompiled\tskipped\tinstructions\tnon_debug_instructions\tfunctions\tdeclarations\n'
    for name in "${PROGRAMS[@]}" "${EXTRA_PROGRAMS[@]}"; do
      [ -f "$OUT/$name.row" ] && cat "$OUT/$name.row"
    done
  } >"$CACHE/programs.tsv"
  [ ${#failed[@]} -eq 0 ] || die "not built: ${failed[*]}"
  log "prepared in $((SECONDS - start)) s; cache $CACHE uses $(du -sh "$CACHE" | cut -f1); summary in $CACHE/programs.tsv"
}

list() {
  [ -f "$CACHE/programs.tsv" ] || die "nothing prepared yet: run '$0 prepare'"
  column -t -s $'\t' "$CACHE/programs.tsv"
}

# ---------------------------------------------------------------------------------------------
# Measuring: `sluice analyze` on each prepared program, once per analysis and solver.

RESULTS="$CACHE/results"
RUN_TIMEOUT="${SLUICE_REAL_PROGRAMS_TIMEOUT:-1800}" # seconds per analyze run
ANALYSES=(uninit taint)
DAEMON_PID=""
DAEMON_ADDRESS=""

stop_daemon() {
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  DAEMON_PID=""
}

# start_daemon: sluiced on a free loopback port, the CPU device, every limit at its default.
start_daemon() {
  local out="$RESULTS/sluiced.stdout"
  "$BUILD/bin/sluiced" --listen=127.0.0.1:0 --backend=cpu >"$out" 2>"$RESULTS/sluiced.log" &
  DAEMON_PID=$!
  trap stop_daemon EXIT
  local _
  for _ in $(seq 1 300); do # up to 30 s for the daemon to report its port
    DAEMON_ADDRESS=$(sed -n 's/^sluiced listening on //p' "$out")
    [ -n "$DAEMON_ADDRESS" ] && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || die "sluiced exited; see $RESULTS/sluiced.log"
    sleep 0.1
  done
  die "sluiced did not report its port; see $RESULTS/sluiced.log"
}

# analyze_once NAME ANALYSIS MODE: one `sluice analyze --stats --format=json` run (MODE is
# resident, reference or remote) into results/NAME.ANALYSIS.MODE.{json,time,err}; the resident
# run also writes the problem (NAME.ANALYSIS.bin). Returns the command's status.
analyze_once() {
  local name=$1 analysis=$2 mode=$3 bc="$OUT/$1.bc"
  local base="$RESULTS/$name.$analysis.$mode"
  local args=(analyze --analysis="$analysis" --stats --format=json --out="$base.json")
  case "$mode" in
    resident) args+=(--solver=resident --emit-problem="$RESULTS/$name.$analysis.bin") ;;
    reference) args+=(--solver=reference) ;;
    remote) args+=(--solver=resident --server="$DAEMON_ADDRESS") ;;
  esac
  rm -f "$base.json"
  local status=0
  /usr/bin/time -f '%e %M' -o "$base.time" timeout "$RUN_TIMEOUT" "$BUILD/bin/sluice" "${args[@]}" \
    "$bc" 2>"$base.err" || status=$?
  [ $status -ne 124 ] || echo "timed out after $RUN_TIMEOUT s" >>"$base.err"
  return $status
}

# json FILE FILTER: one value of a run's JSON.
json() { jq -r "$2" "$1"; }

# run_analyzer NAME: both analyses of one program, each solved three ways; one row of
# results.tsv per analysis (or a row saying which run failed, and why).
run_analyzer() {
  local name=$1 analysis mode
  for analysis in "${ANALYSES[@]}"; do
    log "$name: $analysis (resident in-process, reference, resident through sluiced)"
    local failed=""
    for mode in resident reference remote; do
      if ! analyze_once "$name" "$analysis" "$mode"; then
        failed="$mode: $(grep -v '^sluice analyze: window' "$RESULTS/$name.$analysis.$mode.err" | tail -1)"
        break
      fi
    done
    if [ -n "$failed" ]; then
      printf '%s\t%s\tFAILED\t%s\n' "$name" "$analysis" "$failed" >>"$RESULTS/results.tsv"
      log "$name $analysis FAILED ($failed)"
      continue
    fi
    local r="$RESULTS/$name.$analysis"
    # Exact agreement: the three solutions' digests, and the three findings, are the same.
    local agree=yes digest
    digest=$(json "$r.resident.json" .stats.solver.solution_digest)
    for mode in reference remote; do
      [ "$(json "$r.$mode.json" .stats.solver.solution_digest)" = "$digest" ] || agree=NO
      cmp -s <(jq -c .findings "$r.resident.json") <(jq -c .findings "$r.$mode.json") || agree=NO
    done
    local t_res t_ref t_rem rss_res rss_ref _
    read -r t_res rss_res <"$r.resident.time"
    read -r t_ref rss_ref <"$r.reference.time"
    read -r t_rem _ <"$r.remote.time"
    local s=.stats
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
      "$name" "$analysis" \
      "$(json "$r.resident.json" $s.program.ir_instructions)" \
      "$(json "$r.resident.json" $s.program.functions)" \
      "$(json "$r.resident.json" $s.problem.nodes)" \
      "$(json "$r.resident.json" $s.problem.facts)" \
      "$(json "$r.resident.json" $s.problem.flow_pairs)" \
      "$(json "$r.resident.json" $s.solver.path_edges)" \
      "$(json "$r.resident.json" $s.front_end_seconds)" \
      "$(json "$r.resident.json" $s.build_seconds)" \
      "$(json "$r.resident.json" $s.solver.seconds)" \
      "$(json "$r.reference.json" $s.solver.seconds)" \
      "$(json "$r.remote.json" $s.solver.seconds)" \
      "$rss_res" "$rss_ref" \
      "$(json "$r.resident.json" $s.solver.peak_device_bytes)" \
      "$(json "$r.resident.json" $s.findings)" \
      "$agree" "$t_res/$t_ref/$t_rem" \
      "$(json "$r.resident.json" $s.points_to_seconds)" \
      "$(json "$r.resident.json" $s.findings_seconds)" >>"$RESULTS/results.tsv"
    [ "$agree" = yes ] || log "$name $analysis: the solvers DISAGREE (see $r.*.json)"
  done
}

RESULT_COLUMNS='program	analysis	ir_instructions	functions	nodes	facts	flow_pairs	path_edges	front_end_s	problem_s	resident_s	reference_s	remote_s	rss_resident_kib	rss_reference_kib	device_bytes	findings	agree	wall_s	points_to_s	findings_s'

# report: results.tsv as the Markdown table docs/benchmarks.md shows.
report() {
  [ -f "$RESULTS/results.tsv" ] || die "nothing measured yet: run '$0 run'"
  echo "| program | analysis | IR instructions | functions | nodes | facts | path edges | front end | points-to | problem | resident | reference | via sluiced | findings and paths | peak RSS resident / reference | device memory | findings | agree |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F'\t' '
    function mib(kib) { return sprintf("%.0f MiB", kib / 1024) }
    function n(x) { s = sprintf("%d", x); while (s ~ /[0-9]{4}/) sub(/[0-9]{3}($|,)/, ",&", s); gsub(/,,/, ",", s); return s }
    NR == 1 { next }
    $3 == "FAILED" { printf "| %s | %s | %s |\n", $1, $2, "not solved: " $4; next }
    { printf "| %s | %s | %s | %s | %s | %s | %s | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %s / %s | %.0f MiB | %s | %s |\n",
        $1, $2, n($3), n($4), n($5), n($6), n($8), $9, $20, $10, $11, $12, $13, $21, mib($14), mib($15), $16 / 1048576, n($17), $18 }
  ' "$RESULTS/results.tsv"
}

run() {
  prepare "$@"
  configure_and_build -DSLUICE_LLVM=ON >/dev/null
  mkdir -p "$RESULTS"
  printf '%s\n' "$RESULT_COLUMNS" >"$RESULTS/results.tsv"
  start_daemon
  local names=("$@") name
  [ ${#names[@]} -gt 0 ] || names=("${PROGRAMS[@]}")
  for name in "${names[@]}"; do run_analyzer "$name"; done
  stop_daemon
  log "results in $RESULTS/results.tsv; as a table:"
  report
}

usage() {
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

case "${1:-}" in
  prepare) shift; prepare "$@" ;;
  list) list ;;
  run) shift; run "$@" ;;
  report) report ;;
  *) usage ;;
esac
