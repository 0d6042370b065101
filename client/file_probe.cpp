#include "client/file_probe.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace lizard {

FileProbedMsg probe_file(const ProbeFileMsg& m, const DataRoots* worker_roots) {
  FileProbedMsg reply;
  reply.probe_id = m.probe_id;
  auto roots = DataRoots::of_server(m.data_roots);
  if (!roots.ok()) {
    reply.error = roots.status().message();
    return reply;
  }
  auto opened = roots->open(m.path, worker_roots);
  if (!opened.ok()) {
    reply.error = opened.status().message();
    return reply;
  }
  struct stat st {};
  if (::fstat(opened->fd(), &st) != 0) {
    reply.error = m.path + ": fstat: " + std::strerror(errno);
    return reply;
  }
  reply.ok = true;
  reply.identity = FileIdentity::of(st);
  return reply;
}

}  // namespace lizard
