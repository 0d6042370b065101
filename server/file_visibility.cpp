#include "server/file_visibility.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "server/worker_registry.h"

namespace lizard {

using nlohmann::json;

namespace {

const DataRoots kAnywhere;

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", s);
  return text;
}

}  // namespace

json visibility_verdict(const std::string& path, const FileIdentity& server_view,
                        const std::optional<FileIdentity>& client_view,
                        const std::map<std::string, FileProbedMsg>& answers,
                        const std::vector<std::string>& silent, double timeout_s) {
  json workers = json::array();
  std::string why;
  auto not_shared = [&](const std::string& reason) {
    if (why.empty()) why = reason;
  };
  if (client_view) {
    const std::string changes = version_changes(*client_view, server_view);
    if (!changes.empty())
      not_shared("the server sees another file at this path (yours -> the server's: " + changes +
                 ")");
  }
  for (const auto& [id, a] : answers) {
    json w = {{"worker", id}, {"sees", false}};
    if (!a.ok) {
      w["why"] = a.error;
    } else if (std::string changes = version_changes(server_view, a.identity); !changes.empty()) {
      w["why"] = "another file at this path (the server's -> the worker's: " + changes + ")";
    } else {
      w["sees"] = true;
    }
    if (!w["sees"].get<bool>()) not_shared("worker " + id + ": " + w["why"].get<std::string>());
    workers.push_back(std::move(w));
  }
  for (const std::string& id : silent) {
    const std::string late = "did not answer within " + seconds_text(timeout_s) + " s";
    workers.push_back({{"worker", id}, {"sees", false}, {"why", late}});
    not_shared("worker " + id + ": " + late);
  }
  if (workers.empty()) not_shared("no worker has joined");
  json out = {{"path", path}, {"shared", why.empty()}, {"workers", std::move(workers)}};
  if (!why.empty()) out["why"] = why;
  return out;
}

FileVisibility::FileVisibility(WorkerRegistry* workers, const DataRoots* roots, double timeout_s)
    : workers_(workers), roots_(roots ? roots : &kAnywhere), timeout_s_(timeout_s) {}

Result<json> FileVisibility::probe(const std::string& path,
                                   const std::optional<FileIdentity>& client_view) {
  LIZARD_ASSIGN_OR_RETURN(InputFile file, roots_->open(path));
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0)
    return internal_error(path + ": fstat: " + std::strerror(errno));
  const FileIdentity server_view = FileIdentity::of(st);
  std::string id;
  {
    std::lock_guard<std::mutex> l(mu_);
    id = "probe-" + std::to_string(next_id_++);
    replies_[id];
  }
  const std::string frame = encode(ProbeFileMsg{id, path, roots_->roots()}.to_message());
  std::vector<std::string> asked;
  for (const WorkerView& w : workers_->view())
    if (workers_->send(w.id, frame).ok()) asked.push_back(w.id);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::duration<double>(timeout_s_));
  std::unique_lock<std::mutex> l(mu_);
  std::map<std::string, FileProbedMsg>& got = replies_[id];
  std::vector<std::string> silent;
  for (;;) {
    silent.clear();
    for (const std::string& w : asked)
      if (!got.count(w) && workers_->link(w)) silent.push_back(w);
    if (silent.empty() || std::chrono::steady_clock::now() >= deadline) break;
    answered_.wait_until(l, deadline);
  }
  const std::map<std::string, FileProbedMsg> answers = std::move(got);
  replies_.erase(id);
  l.unlock();
  return visibility_verdict(path, server_view, client_view, answers, silent, timeout_s_);
}

void FileVisibility::on_reply(const std::string& worker_id, const FileProbedMsg& m) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = replies_.find(m.probe_id);
    if (it == replies_.end()) return;  // late: the probe gave up on it
    it->second[worker_id] = m;
  }
  answered_.notify_all();
}

}  // namespace lizard
