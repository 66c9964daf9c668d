"""`python -m services.runner`: one RQ worker process for rollouts (scale by running more)."""

from services.runner.multiproc import use_multiprocess_metrics

if __name__ == "__main__":
    use_multiprocess_metrics()  # before prometheus_client is imported (by the worker's modules)
    from services.runner.worker import run_worker

    run_worker()
