// An executor that runs nothing by itself: ReplicasManager's periodic tasks and one-shot jobs
// wait here until the harness says to run them, so each is a step the harness controls.
//
// A periodic task is named by its period (the broker node gives each of ReplicasManager's
// periods a distinct value); `runPeriodic(period)` runs the task(s) of that period once.
// One-shots (submit, execute, schedule) queue in order; `runOneShots()` runs them, with those
// they queue in turn. `inline` executors run everything at once on the caller's thread (the
// controller-address scan, which is not part of what is checked).

import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

final class ManualExecutor implements ScheduledExecutorService {
    private final boolean inline;
    private final Map<Long, List<Task>> periodic = new LinkedHashMap<>();
    private final Deque<Runnable> oneShots = new ArrayDeque<>();
    private volatile boolean shutdown;

    ManualExecutor(boolean inline) {
        this.inline = inline;
    }

    /** Run the live periodic task(s) of this period once; how many ran. */
    int runPeriodic(long periodMillis) {
        List<Task> tasks;
        synchronized (this) {
            tasks = new ArrayList<>(periodic.getOrDefault(periodMillis, List.of()));
        }
        int ran = 0;
        for (Task t : tasks) {
            if (!t.isCancelled()) {
                t.body.run();
                ran++;
            }
        }
        return ran;
    }

    /** Run the queued one-shots, and those they queue; how many ran. */
    int runOneShots() {
        int ran = 0;
        while (true) {
            Runnable next;
            synchronized (this) {
                next = oneShots.poll();
            }
            if (next == null) {
                return ran;
            }
            next.run();
            ran++;
        }
    }

    synchronized int pendingOneShots() {
        return oneShots.size();
    }

    synchronized List<Long> periods() {
        List<Long> out = new ArrayList<>();
        periodic.forEach((period, tasks) -> {
            if (tasks.stream().anyMatch(t -> !t.isCancelled())) {
                out.add(period);
            }
        });
        return out;
    }

    private Task oneShot(Runnable body) {
        Task t = new Task(body, 0);
        if (inline) {
            t.body.run();
        } else {
            synchronized (this) {
                oneShots.add(t.body);
            }
        }
        return t;
    }

    private synchronized Task periodic(Runnable body, long periodMillis) {
        Task t = new Task(body, periodMillis);
        periodic.computeIfAbsent(periodMillis, k -> new ArrayList<>()).add(t);
        return t;
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        return oneShot(command);
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        throw new UnsupportedOperationException("schedule(Callable)");
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        return periodic(command, unit.toMillis(period));
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
        return periodic(command, unit.toMillis(delay));
    }

    @Override
    public void execute(Runnable command) {
        oneShot(command);
    }

    @Override
    public Future<?> submit(Runnable task) {
        return oneShot(task);
    }

    @Override
    public <T> Future<T> submit(Runnable task, T result) {
        throw new UnsupportedOperationException("submit(Runnable, T)");
    }

    @Override
    public <T> Future<T> submit(Callable<T> task) {
        throw new UnsupportedOperationException("submit(Callable)");
    }

    @Override
    public void shutdown() {
        shutdown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
        shutdown = true;
        synchronized (this) {
            List<Runnable> left = new ArrayList<>(oneShots);
            oneShots.clear();
            periodic.clear();
            return left;
        }
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
        return true;
    }

    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks) {
        throw new UnsupportedOperationException("invokeAll");
    }

    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit) {
        throw new UnsupportedOperationException("invokeAll");
    }

    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks) {
        throw new UnsupportedOperationException("invokeAny");
    }

    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit) {
        throw new UnsupportedOperationException("invokeAny");
    }

    /** A task's handle: cancellable; get() is what ran it (the body catches nothing). */
    private static final class Task extends FutureTask<Object> implements ScheduledFuture<Object> {
        final Runnable body;

        Task(Runnable body, long period) {
            super(body, null);
            this.body = period > 0 ? body : this;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return 0;
        }

        @Override
        public int compareTo(Delayed o) {
            return 0;
        }

        @Override
        public Object get() throws InterruptedException, ExecutionException {
            return super.get();
        }
    }
}
