# `make run`'s install (requirements.txt: the runtime, no test tools) and its `streamlit run app.py`,
# in a container, with the hosting settings below (CPU only: the app never needs a GPU).
# Hosting for a team (several replicas behind a load balancer): deploy/README.md.
FROM python:3.11-slim
WORKDIR /app
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY requirements.txt .
# torch==2.13.0 is pinned; the CPU wheel index keeps the image small (no CUDA libraries)
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
COPY . .
# Not root: the app reads its own files and writes only the Hugging Face cache under HOME.
RUN useradd --uid 10001 --create-home --home-dir /home/app app
USER 10001
ENV HOME=/home/app
EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://localhost:8501/_stcore/health')"
# showErrorDetails none: an unexpected error shows a generic message, never a traceback or a
# server path (the app's own guard logs it); maxUploadSize (MiB) is the config loader's own cap
# (engine/model/config.py MAX_CONFIG_MIB) and maxMessageSize (MB) fits a pasted config of that
# size: they bound what one request can hand the server; toolbarMode minimal hides the
# developer menu from users.
CMD ["streamlit", "run", "app.py", "--server.headless", "true", "--server.port", "8501", \
     "--server.address", "0.0.0.0", "--server.fileWatcherType", "none", \
     "--client.showErrorDetails", "none", "--client.toolbarMode", "minimal", \
     "--server.maxUploadSize", "8", "--server.maxMessageSize", "16", \
     "--browser.gatherUsageStats", "false"]
