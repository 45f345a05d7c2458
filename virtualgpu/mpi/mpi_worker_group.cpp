#include "virtualgpu/mpi/mpi_worker_group.h"

#include <unistd.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "virtualgpu/mpi/mpi_communicator.h"

namespace mirrorlab::vgpu {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char words[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, words, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(words, length));
}

void initialize_mpi() {
  int started = 0;
  MPI_Initialized(&started);
  if (started) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error(
        "this MPI library cannot be called from more than one thread (MPI_THREAD_SERIALIZED): "
        "the step across workers runs on a device's thread");
  }
}

void finalize_mpi() {
  int started = 0, finished = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&finished);
  if (started && !finished) MPI_Finalize();
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<std::size_t>(length));
  const std::size_t cut = version.find_first_of(",\n");
  return cut == std::string::npos ? version : version.substr(0, cut);
}

namespace {

int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument("a collective across workers of " + std::to_string(count) +
                                " values is more than MPI's int count holds");
  }
  return static_cast<int>(count);
}

using InCollective = WorkerWatch::InCollective;

}  // namespace

MpiWorkerGroup::MpiWorkerGroup(std::chrono::milliseconds timeout, WorkerWatch::Lost on_lost)
    : comm_(std::make_unique<MpiCommunicator>()) {
  initialize_mpi();
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_->comm), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(comm_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_->comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_->comm, &size_), "MPI_Comm_size");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // Before the watch (it needs the places): a worker that dies this early is mpirun's to report.
  const std::vector<std::string> places = all_gather(std::to_string(getpid()) + " " + host);
  for (const std::string& p : places) {
    const std::size_t space = p.find(' ');
    places_.push_back(WorkerPlace{p.substr(space + 1), std::stoll(p.substr(0, space))});
  }
  watch_ = std::make_unique<WorkerWatch>(places_, rank_, timeout, std::move(on_lost));
}

MpiWorkerGroup::~MpiWorkerGroup() {
  watch_.reset();
  int finished = 0;
  MPI_Finalized(&finished);
  if (!finished && comm_->comm != MPI_COMM_NULL) MPI_Comm_free(&comm_->comm);
}

void MpiWorkerGroup::set_activity(std::string activity) {
  if (watch_) watch_->set_activity(std::move(activity));
}

std::string MpiWorkerGroup::transport() const {
  return "MPI_Allreduce (" + mpi_library_version() + ")";
}

void MpiWorkerGroup::all_reduce_sum(std::span<float> values) {
  InCollective in(watch_.get(), "the all-reduce across workers");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size()), MPI_FLOAT,
                          MPI_SUM, comm_->comm),
            "MPI_Allreduce");
}

void MpiWorkerGroup::all_reduce_sum(std::span<double> values) {
  InCollective in(watch_.get(), "the sum of the workers' statistics");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size()), MPI_DOUBLE,
                          MPI_SUM, comm_->comm),
            "MPI_Allreduce");
}

void MpiWorkerGroup::broadcast(std::span<float> values, int root) {
  InCollective in(watch_.get(), "the broadcast from worker 0");
  check_mpi(MPI_Bcast(values.data(), checked_count(values.size()), MPI_FLOAT, root, comm_->comm),
            "MPI_Bcast");
}

std::vector<std::string> MpiWorkerGroup::all_gather(const std::string& mine) {
  InCollective in(watch_.get(), "the exchange between workers");
  int length = checked_count(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_->comm),
            "MPI_Allgather");
  std::vector<int> offsets(lengths.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = checked_count(total);
    total += static_cast<std::size_t>(lengths[r]);
  }
  std::string all(total, '\0');
  check_mpi(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(),
                           offsets.data(), MPI_CHAR, comm_->comm),
            "MPI_Allgatherv");
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    texts.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  }
  return texts;
}

std::string MpiWorkerGroup::wait_for_text(const std::string& text, int root) {
  // Open MPI's blocking collectives poll without sleeping: a worker waiting in one for a window
  // left paused would keep a core busy. A non-blocking broadcast tested now and then does not.
  // Not inside InCollective: the wait may last as long as the window stays open; the watch
  // still sees a worker on this host that dies.
  std::uint64_t length = rank_ == root ? text.size() : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibcast(&length, 1, MPI_UINT64_T, root, comm_->comm, &request), "MPI_Ibcast");
  for (int tests = 0;; ++tests) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) break;
    if (tests > 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::string received = rank_ == root ? text : std::string(length, '\0');
  InCollective in(watch_.get(), "the exchange between workers");
  check_mpi(MPI_Bcast(received.data(), checked_count(length), MPI_CHAR, root, comm_->comm),
            "MPI_Bcast");
  return received;
}

void MpiWorkerGroup::finish() {
  if (finished_) return;
  {
    InCollective in(watch_.get(), "the last barrier");
    check_mpi(MPI_Barrier(comm_->comm), "MPI_Barrier");
  }
  // Every worker is past its last exchange: stop watching, then meet once more, so that no
  // worker can leave (and look gone) before every other has stopped watching.
  if (watch_) watch_->stop();
  check_mpi(MPI_Barrier(comm_->comm), "MPI_Barrier");
  finished_ = true;
}

void MpiWorkerGroup::plain_mpi_allreduce(std::span<float> values) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size()), MPI_FLOAT,
                          MPI_SUM, comm_->comm),
            "MPI_Allreduce");
}

}  // namespace mirrorlab::vgpu
