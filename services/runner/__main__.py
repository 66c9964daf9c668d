"""`python -m services.runner`: a runner process for rollouts, with `RUNNER_WORKERS` RQ workers (default 1; more
share one import of the job code, see `services/runner/pool.py`). Scale by running more."""

from services.runner.prometheus_multiprocess import use_multiprocess_metrics

if __name__ == "__main__":
    use_multiprocess_metrics()  # before prometheus_client is imported (by the worker's modules)
    from services.runner.settings import RunnerSettings

    settings = RunnerSettings()
    if settings.workers > 1:
        from services.runner.pool import run_pool

        run_pool(settings)
    else:
        from services.runner.worker import run_worker

        run_worker(settings)
