//! The `additionalPrinterColumns` of a CRD version as the served resource's
//! [`PrinterColumn`]s, which the Table printers (module `printers`) print as the
//! apiextensions-apiserver's `tableconvertor` does: the Name column, then each column's value at
//! its `jsonPath` (Kubernetes' JSONPath subset: `.a.b`, `.a[0]`); without columns, the Age
//! column.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;

use crate::resource::PrinterColumn;

/// The printer columns of a version with these `additionalPrinterColumns`.
pub(super) fn printer_columns(columns: &[CustomResourceColumnDefinition]) -> Vec<PrinterColumn> {
    if columns.is_empty() {
        return PrinterColumn::defaults();
    }
    columns
        .iter()
        .map(|c| PrinterColumn {
            name: c.name.clone(),
            type_: c.type_.clone(),
            format: c.format.clone().unwrap_or_default(),
            description: c.description.clone().unwrap_or_default(),
            priority: c.priority.unwrap_or(0),
            json_path: c
                .json_path
                .trim_start_matches('{')
                .trim_end_matches('}')
                .to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;

    use crate::resource::PrinterColumn;

    #[test]
    fn columns_keep_their_definition_and_none_means_age() {
        let size = CustomResourceColumnDefinition {
            name: "Size".into(),
            type_: "integer".into(),
            json_path: ".spec.size".into(),
            priority: Some(1),
            ..Default::default()
        };
        let columns = super::printer_columns(&[size]);
        assert_eq!(columns.len(), 1);
        assert_eq!(
            (columns[0].name.as_str(), columns[0].type_.as_str()),
            ("Size", "integer")
        );
        assert_eq!(
            (columns[0].priority, columns[0].json_path.as_str()),
            (1, ".spec.size")
        );
        assert_eq!(super::printer_columns(&[]), PrinterColumn::defaults());
    }
}
