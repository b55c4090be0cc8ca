from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile

from broker.analysis.schemas import Report
from broker.deps import CurrentCaller
from broker.errors import Unprocessable, responses
from broker.metrics.report import analyze
from broker.metrics.risk import DEFAULT_ALPHA, DEFAULT_BETA, QirThresholds
from broker.uploads import Upload, check_columns, parse_columns, read_upload

router = APIRouter(prefix="/v1/analyze", tags=["Measurement"])


@router.post(
    "",
    response_model=Report,
    responses=responses(400, 401, 403, 413, 422),
    summary="Measure a dataset (no policy, nothing stored)",
)
def analyze_dataset(
    _: CurrentCaller,
    file: Annotated[UploadFile, File(description="CSV, JSON (array of records) or Parquet")],
    quasi_identifiers: Annotated[str | None, Form(description="Comma-separated")] = None,
    sensitive: Annotated[str | None, Form(description="Comma-separated; needs QIs")] = None,
    combinations: Annotated[int, Form(ge=0, le=4, description="Largest combination")] = 3,
    alpha: Annotated[float, Form(gt=0, le=100)] = DEFAULT_ALPHA,
    beta: Annotated[float, Form(ge=0, le=100)] = DEFAULT_BETA,
) -> Report:
    frame = read_upload(Upload(file.file.read(), file.filename, file.content_type))
    qi, sens = parse_columns(quasi_identifiers), parse_columns(sensitive)
    check_columns(frame, qi, sens)
    try:
        report = analyze(frame, qi, sens, combinations, QirThresholds(alpha, beta))
    except ValueError as error:
        raise Unprocessable(str(error)) from None
    return Report.model_validate(report.as_dict())
