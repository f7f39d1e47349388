// Loads AFL++'s GCC instrumentation plugin into a GCC whose Debian build
// string differs from the one the plugin was compiled against.
//
// Debian 12's afl++ 4.04c-4 was built against gcc-12 12.2.0-14; the point
// release ships 12.2.0-14+deb12u1, the same upstream release with a different
// `--with-pkgversion` and build path in its configure line. The plugin's
// version check compares that whole line, so every `afl-g++-fast` compile
// aborts with "GCC and plugin have incompatible versions, expected GCC
// 12.2.0, is 12.2.0". scripts/fuzz installs this shim as `afl-gcc-pass.so` in
// a private AFL_PATH directory only when that check fails. The shim loads the
// real plugin (path in REAL_AFL_GCC_PASS) and hands it GCC's own version
// record with only the configure line swapped for the one embedded in the
// plugin; the release fields (basever, datestamp, devphase, revision) are
// still checked by the plugin, so a plugin built for another GCC release is
// still refused.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef REAL_AFL_GCC_PASS
#define REAL_AFL_GCC_PASS "/usr/lib/afl/afl-gcc-pass.so"
#endif

// GCC's plugin ABI (gcc-plugin.h); the name/argument record is passed through
// untouched, so it stays opaque here.
struct plugin_gcc_version {
  const char* basever;
  const char* datestamp;
  const char* devphase;
  const char* revision;
  const char* configuration_arguments;
};
struct plugin_name_args;

int plugin_is_GPL_compatible;

// The configure line compiled into the plugin: the one string in its file that
// starts with GCC's "../src/configure " prefix. Copied out, so it outlives the
// mapping. Returns NULL if the file cannot be read or holds no such string.
static char* EmbeddedConfigureLine(const char* path) {
  static const char kPrefix[] = "../src/configure ";
  int fd = open(path, O_RDONLY);
  if (fd < 0) return NULL;
  struct stat st;
  char* out = NULL;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const char* data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      const char* hit = memmem(data, (size_t)st.st_size, kPrefix, sizeof(kPrefix) - 1);
      if (hit != NULL) {
        size_t len = strnlen(hit, (size_t)(data + st.st_size - hit));
        if (hit + len < data + st.st_size) out = strndup(hit, len);  // NUL-terminated in file.
      }
      munmap((void*)data, (size_t)st.st_size);
    }
  }
  close(fd);
  return out;
}

int plugin_init(struct plugin_name_args* info, struct plugin_gcc_version* version) {
  void* real = dlopen(REAL_AFL_GCC_PASS, RTLD_NOW | RTLD_GLOBAL);
  if (real == NULL) {
    fprintf(stderr, "afl gcc plugin shim: cannot load %s: %s\n", REAL_AFL_GCC_PASS, dlerror());
    return 1;
  }
  int (*real_init)(struct plugin_name_args*, struct plugin_gcc_version*) =
      (int (*)(struct plugin_name_args*, struct plugin_gcc_version*))dlsym(real, "plugin_init");
  if (real_init == NULL) {
    fprintf(stderr, "afl gcc plugin shim: %s has no plugin_init\n", REAL_AFL_GCC_PASS);
    return 1;
  }
  char* configure = EmbeddedConfigureLine(REAL_AFL_GCC_PASS);
  if (configure == NULL) {
    fprintf(stderr, "afl gcc plugin shim: no configure line found in %s\n", REAL_AFL_GCC_PASS);
    return 1;
  }
  static struct plugin_gcc_version as_built;  // Outlives the call, in case it is kept.
  as_built = *version;
  as_built.configuration_arguments = configure;
  return real_init(info, &as_built);
}
